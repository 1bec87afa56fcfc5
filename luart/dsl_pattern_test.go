package luart

import (
	"strings"
	"testing"
)

// stream(Pattern): every topic whose whole name matches is read by the one source, which
// describe prints as Kafka does (the regex, no brackets); a topic two sources would read
// is refused.
func TestStreamPattern(t *testing.T) {
	_, b, err := load(t, prelude+`
b:stream({pattern = "orders-[a-z]+"}, {offsetReset = "latest"}):mapValues(function(v, r) return r.topic .. ":" .. v end):to("out")
b:stream("orders-x1"):to("out")
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: orders-[a-z]+)
      --> KSTREAM-MAPVALUES-0000000001
    Processor: KSTREAM-MAPVALUES-0000000001 (stores: [])
      --> KSTREAM-SINK-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Sink: KSTREAM-SINK-0000000002 (topic: out)
      <-- KSTREAM-MAPVALUES-0000000001

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000003 (topics: [orders-x1])
      --> KSTREAM-SINK-0000000004
    Sink: KSTREAM-SINK-0000000004 (topic: out)
      <-- KSTREAM-SOURCE-0000000003

`
	if got := b.Describe().String(); got != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", got, want)
	}
	sub, err := b.Subscription([]string{"orders-eu", "orders-us", "orders-eu-old", "other", "xorders-eu"})
	if err != nil || strings.Join(sub, ",") != "orders-eu,orders-us,orders-x1" {
		t.Fatalf("Subscription = %v, %v; want the named topic and the whole-name matches", sub, err)
	}
	if r := b.OffsetResetOf("orders-us"); r.Strategy.String() != "latest" {
		t.Errorf("a matched topic takes its pattern source's offset reset, got %v", r.Strategy)
	}
	d := storeDriverFor(t, b)
	pipe(t, d, "orders-new", "k", "v1")
	pipe(t, d, "orders-x1", "k", "v2")
	if got := outputs(d, "out"); len(got) != 2 || got[0].v != "orders-new:v1" || got[1].v != "v2" {
		t.Fatalf("out = %v, want the matched topic through the pattern source and the named one on its own", got)
	}

	_, b, err = load(t, prelude+`
b:stream({pattern = "a.*"}):to("out")
b:stream({pattern = ".*b"}):to("out")
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Subscription([]string{"ab"}); err == nil || !strings.Contains(err.Error(), "Topic ab matches the patterns a.* of KSTREAM-SOURCE-0000000000 and .*b of KSTREAM-SOURCE-0000000002") {
		t.Fatalf("a topic two patterns match: %v", err)
	}
	for script, want := range map[string]string{
		`b:stream({pattern = "(a"})`:                          `topic pattern "(a": error parsing regexp`,
		`b:stream({"a", pattern = "b"})`:                      `a pattern source is {pattern = "regex"}`,
		`b:stream({pattern = "a"}) b:stream({pattern = "a"})`: `topic pattern "a" is already a source`,
	} {
		_, _, err := load(t, prelude+script+"\nreturn b", nil)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), ":3:") {
			t.Errorf("%s: %v, want an error at line 3 containing %q", script, err, want)
		}
	}
}
