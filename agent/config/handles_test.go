package config

import (
	"strings"
	"testing"
	"time"
)

// A key's Go type is its Type's: reading a duration as a string would always give "".
func TestDeclareRefusesAnotherGoType(t *testing.T) {
	cases := []struct {
		name    string
		declare func(*keyTable)
	}{
		{"string as int64", func(tb *keyTable) { declare[int64](tb, Key{Name: "a", Type: TypeString}) }},
		{"duration as int64", func(tb *keyTable) { declare[int64](tb, Key{Name: "a", Type: TypeDuration}) }},
		{"enum as bool", func(tb *keyTable) { declare[bool](tb, Key{Name: "a", Type: TypeEnum}) }},
		{"list as string", func(tb *keyTable) { declare[string](tb, Key{Name: "a", Type: TypeList}) }},
		{"long as duration", func(tb *keyTable) { declareClient[time.Duration](tb, Key{Name: "a", Type: TypeLong, Client: ForAll}) }},
		{"client key without clients", func(tb *keyTable) { declareClient[string](tb, Key{Name: "a", Type: TypeString}) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "config: test.a") {
					t.Fatalf("panic %q, want one naming test.a", msg)
				}
			}()
			c.declare(&keyTable{section: "test"})
		})
	}
	tb := &keyTable{section: "test"}
	for _, k := range []Key{{Name: "s", Type: TypeString, Secret: true}, {Name: "c", Type: TypeClass}, {Name: "l", Type: TypeLong}} {
		switch k.Type {
		case TypeLong:
			declare[int64](tb, k)
		default:
			declare[string](tb, k)
		}
	}
	if len(tb.keys) != 3 || tb.keys[2].FullName() != "test.l" || tb.keys[2].Section != "test" {
		t.Fatalf("declared %+v", tb.keys)
	}
}

// Every handle reads its own key: set in the file, by default, and per client.
func TestHandlesReadTheirKey(t *testing.T) {
	cfg := mustParse(t, "", "poll.ms = 7\ncache.max.bytes.buffering = 5\nproducer.request.timeout.ms = 9\nrequest.timeout.ms = 3")
	if got := pollTime.Get(cfg); got != 7*time.Millisecond || !pollTime.IsSet(cfg) {
		t.Errorf("poll.ms = %v (set %v)", got, pollTime.IsSet(cfg))
	}
	if got := taskTimeout.Get(cfg); got != 5*time.Minute || taskTimeout.IsSet(cfg) {
		t.Errorf("task.timeout.ms = %v (set %v), want the default", got, taskTimeout.IsSet(cfg))
	}
	if cfg.CacheMaxBytes != 5 {
		t.Errorf("the deprecated cache.max.bytes.buffering alone: %d", cfg.CacheMaxBytes)
	}
	pro, adm := cfg.Client(ForProducer), cfg.Client(ForAdmin)
	if got, src := RequestTimeout.Get(pro), RequestTimeout.Source(pro); got != 9*time.Millisecond || src != "streams.producer.request.timeout.ms" {
		t.Errorf("producer request.timeout.ms = %v from %s", got, src)
	}
	if got, src := RequestTimeout.Get(adm), RequestTimeout.Source(adm); got != 3*time.Millisecond || src != RequestTimeout.FullName() {
		t.Errorf("admin request.timeout.ms = %v from %s", got, src)
	}
	if ClientID.unprefixed(cfg) != "" || ClientID.IsSet(pro) {
		t.Error("client.id is not set")
	}
}
