package luart

import (
	"strings"
	"testing"
)

// addGlobalStore: every record of the topic goes through the user's processor, which keeps
// the store (one partition for all); any processor reads the store without connecting it,
// and describe prints the global store's sub-topology as Kafka Streams does.
func TestAddGlobalStore(t *testing.T) {
	_, b, err := load(t, prelude+`
b:addGlobalStore({name = "rates", type = "keyValue", valueSerde = "long"}, "rate-updates", {valueSerde = "string"},
  function()
    local store
    return {
      init = function(ctx) store = ctx:getStateStore("rates") end,
      process = function(ctx, k, v, r) store:put(k, tonumber(v) * 100) end,
    }
  end)
b:stream("amounts"):process(function()
  local rates
  return {
    init = function(ctx) rates = ctx:getStateStore("rates") end,
    process = function(ctx, k, v, r) ctx:forward(k, v .. "@" .. tostring(rates:get(k))) end,
  }
end):to("priced")
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `Topologies:
   Sub-topology: 0 for global store (will not generate tasks)
    Source: KSTREAM-SOURCE-0000000000 (topics: [rate-updates])
      --> KTABLE-SOURCE-0000000001
    Processor: KTABLE-SOURCE-0000000001 (stores: [rates])
      --> none
      <-- KSTREAM-SOURCE-0000000000
  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000002 (topics: [amounts])
      --> KSTREAM-PROCESSOR-0000000003
    Processor: KSTREAM-PROCESSOR-0000000003 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-SOURCE-0000000002
    Sink: KSTREAM-SINK-0000000004 (topic: priced)
      <-- KSTREAM-PROCESSOR-0000000003

`
	if got := b.Describe().String(); got != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", got, want)
	}
	if !b.IsGlobalStore("rates") {
		t.Fatalf("global stores %v, want rates", b.GlobalStores())
	}
	for _, s := range b.Stores() {
		if s.Name == "rates" && s.Logged {
			t.Error("a global store has no changelog: logging must be off")
		}
	}
	d := storeDriverFor(t, b)
	if err := d.PipeTo("rate-updates", 0, []byte("eur"), []byte("3"), 1, nil); err != nil {
		t.Fatal(err)
	}
	pipe(t, d, "amounts", "eur", "7")
	pipe(t, d, "amounts", "usd", "8")
	if got := outputs(d, "priced"); len(got) != 2 || got[0] != (kv{"eur", "7@300"}) || got[1] != (kv{"usd", "8@nil"}) {
		t.Fatalf("priced = %v, want the global store's value read by the stream's processor", got)
	}

	_, b, err = load(t, prelude+`
b:addGlobalStore({name = "g"}, "g-topic", nil, {process = function(ctx, k, v) ctx:forward(k, v) end})
b:stream("in"):to("out")
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	d = storeDriverFor(t, b)
	if err := d.Pipe("g-topic", []byte("k"), []byte("v"), 1, nil); err == nil || !strings.Contains(err.Error(), "the processor of a global store cannot forward") {
		t.Fatalf("forward from a global store's processor: %v", err)
	}
	for script, want := range map[string]string{
		`b:addGlobalStore({name = "g"}, "t", nil, 5)`:                               `addGlobalStore needs a processor table`,
		`b:stream("t") b:addGlobalStore({name = "g"}, "t", nil, {process = print})`: `topic "t" is already a source`,
		`b:addGlobalStore({}, "t", nil, {process = print})`:                         `a store needs a name`,
	} {
		_, _, err := load(t, prelude+script+"\nreturn b", nil)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), ":3:") {
			t.Errorf("%s: %v, want an error at line 3 containing %q", script, err, want)
		}
	}
}
