package luart

import (
	"strings"
	"testing"
)

// Kafka Streams' CogroupedKStreamImplTest#shouldNameRepartitionTopic and
// #shouldInsertRepartitionsTopicForUpstreamKeyModification, through the Lua DSL.
func TestCogroupDescribeGoldens(t *testing.T) {
	cases := []struct{ name, script, want string }{
		{"named repartition", `
local s1, s2 = b:stream("one"), b:stream("two")
local one = s1:map(function(k, v) return v, k end):groupByKey({name = "repartition-test"})
local two = s2:groupByKey()
one:cogroup(agg):cogroup(two, agg):aggregate(init):toStream():to("output")`, `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [one])
      --> KSTREAM-MAP-0000000002
    Processor: KSTREAM-MAP-0000000002 (stores: [])
      --> repartition-test-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: repartition-test-repartition-filter (stores: [])
      --> repartition-test-repartition-sink
      <-- KSTREAM-MAP-0000000002
    Sink: repartition-test-repartition-sink (topic: repartition-test-repartition)
      <-- repartition-test-repartition-filter

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000001 (topics: [two])
      --> COGROUPKSTREAM-AGGREGATE-0000000008
    Source: repartition-test-repartition-source (topics: [repartition-test-repartition])
      --> COGROUPKSTREAM-AGGREGATE-0000000007
    Processor: COGROUPKSTREAM-AGGREGATE-0000000007 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> COGROUPKSTREAM-MERGE-0000000009
      <-- repartition-test-repartition-source
    Processor: COGROUPKSTREAM-AGGREGATE-0000000008 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003])
      --> COGROUPKSTREAM-MERGE-0000000009
      <-- KSTREAM-SOURCE-0000000001
    Processor: COGROUPKSTREAM-MERGE-0000000009 (stores: [])
      --> KTABLE-TOSTREAM-0000000010
      <-- COGROUPKSTREAM-AGGREGATE-0000000007, COGROUPKSTREAM-AGGREGATE-0000000008
    Processor: KTABLE-TOSTREAM-0000000010 (stores: [])
      --> KSTREAM-SINK-0000000011
      <-- COGROUPKSTREAM-MERGE-0000000009
    Sink: KSTREAM-SINK-0000000011 (topic: output)
      <-- KTABLE-TOSTREAM-0000000010

`},
		{"named operation and store", `
local s1, s2 = b:stream("one"), b:stream("two")
local one = s1:map(function(k, v) return v, k end):groupByKey()
local two = s2:groupByKey()
one:cogroup(agg):cogroup(two, agg):aggregate(init, {name = "test", materialized = "store"}):toStream():to("output")`, `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [one])
      --> KSTREAM-MAP-0000000002
    Processor: KSTREAM-MAP-0000000002 (stores: [])
      --> store-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: store-repartition-filter (stores: [])
      --> store-repartition-sink
      <-- KSTREAM-MAP-0000000002
    Sink: store-repartition-sink (topic: store-repartition)
      <-- store-repartition-filter

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000001 (topics: [two])
      --> test-cogroup-agg-1
    Source: store-repartition-source (topics: [store-repartition])
      --> test-cogroup-agg-0
    Processor: test-cogroup-agg-0 (stores: [store])
      --> test-cogroup-merge
      <-- store-repartition-source
    Processor: test-cogroup-agg-1 (stores: [store])
      --> test-cogroup-merge
      <-- KSTREAM-SOURCE-0000000001
    Processor: test-cogroup-merge (stores: [])
      --> KTABLE-TOSTREAM-0000000009
      <-- test-cogroup-agg-0, test-cogroup-agg-1
    Processor: KTABLE-TOSTREAM-0000000009 (stores: [])
      --> KSTREAM-SINK-0000000010
      <-- test-cogroup-merge
    Sink: KSTREAM-SINK-0000000010 (topic: output)
      <-- KTABLE-TOSTREAM-0000000009

`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, b, err := load(t, prelude+`
local function agg(k, v, a) return a .. v end
local function init() return "" end
`+c.script+"\nreturn b", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Describe().String(); got != c.want {
				t.Fatalf("describe:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

// Each input folds with its own aggregator into the one shared aggregate; the result carries
// max(record ts, aggregate ts) (reference §2.1); null values are dropped; a re-keyed input
// goes through its repartition first.
func TestCogroupAggregatesInputsIntoOneTable(t *testing.T) {
	d := storeDriver(t, prelude+`
local one = b:stream("one"):map(function(k, v) return v, k end):groupByKey()
local two = b:stream("two"):groupByKey()
one:cogroup(function(k, v, agg) return agg .. "A" .. v end)
  :cogroup(two, function(k, v, agg) return agg .. "B" .. v end)
  :aggregate(function() return "" end)
  :toStream():to("out")
return b`)
	for _, in := range []struct {
		topic, k, v string
		ts          int64
	}{
		{"one", "x", "a", 10}, // re-keyed to a, value x
		{"two", "a", "2", 5},
		{"two", "b", "3", 7},
		{"one", "y", "b", 6},
		{"two", "a", "", 20}, // null value: dropped
		{"two", "a", "4", 12},
	} {
		var v []byte
		if in.v != "" {
			v = []byte(in.v)
		}
		if err := d.Pipe(in.topic, []byte(in.k), v, in.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	expectLines(t, readSessions(d, "out", asText), []string{
		"a Ax @10", "a AxB2 @10", "b B3 @7", "b B3Ay @7", "a AxB2B4 @12",
	})
}

func TestCogroupErrors(t *testing.T) {
	for _, c := range []struct{ script, want string }{
		{`b:stream("a"):groupByKey():cogroup(function() end):windowedBy(s.TimeWindows.ofSizeWithNoGrace(10))`,
			"not supported yet: CogroupedKStream:windowedBy"},
		{`b:stream("a"):groupByKey():cogroup(function() end):cogroup(b:stream("c"), function() end)`,
			"cogroup expects a grouped stream"},
		{`b:stream("a"):groupByKey():cogroup(function() end):aggregate(function() return "" end, {materialized = "s"})
b:stream("c"):groupByKey():cogroup(function() end):aggregate(function() return "" end, {materialized = "s"})`,
			`store "s" is already declared`},
	} {
		_, _, err := load(t, prelude+c.script+"\nreturn b", nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.script, err, c.want)
		}
	}
}
