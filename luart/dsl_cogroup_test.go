package luart

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
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
// max(record ts, aggregate ts) (Kafka's KStreamAggregate); null values are dropped; a re-keyed input
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

// windowedKeyText renders a time-windowed key [key][start] or a session key
// [key][end][start] as key@start/end.
func windowedKeyText(k []byte, session bool, size int64) string {
	if session {
		n := len(k) - 16
		return string(k[:n]) + "@" + itoa(int64(binary.BigEndian.Uint64(k[n+8:]))) + "/" + itoa(int64(binary.BigEndian.Uint64(k[n:n+8])))
	}
	n := len(k) - 8
	start := int64(binary.BigEndian.Uint64(k[n:]))
	return string(k[:n]) + "@" + itoa(start) + "/" + itoa(start+size)
}

func cogroupOutputs(t *testing.T, d *pipeline.Driver, session bool, size int64, inputs ...sjInput) []string {
	t.Helper()
	for _, in := range inputs {
		if err := d.Pipe(in.topic, []byte(in.key), []byte(in.value), in.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for {
		r, ok := d.ReadOutput("output")
		if !ok {
			return out
		}
		v := "nil"
		if r.Value != nil {
			v = string(r.Value)
		}
		out = append(out, windowedKeyText(r.Key, session, size)+" "+v+" @"+itoa(r.Timestamp))
	}
}

const windowedCogroupScript = prelude + `
local adder = function(k, v, agg) return agg .. "+" .. v end
local remover = function(k, v, agg) return agg .. "-" .. v end
local g1, g2 = b:stream("topic"):groupByKey(), b:stream("topic2"):groupByKey()
g1:cogroup(adder):cogroup(g2, remover):windowedBy(%s)
  :aggregate(function() return "0" end%s):toStream():to("output")
return b`

// Kafka Streams' TimeWindowedCogroupedKStreamImplTest#timeWindowMixAggregatorsManyWindowsTest
// and SlidingWindowedCogroupedKStreamImplTest#slidingWindowAggregateStreamsTest: each input
// folds with its own aggregator into the shared windows.
func TestCogroupTimeAndSlidingWindows(t *testing.T) {
	d := storeDriver(t, fmt.Sprintf(windowedCogroupScript, `s.TimeWindows.ofSizeWithNoGrace(500)`, ""))
	expectLines(t, cogroupOutputs(t, d, false, 500,
		sjInput{"topic", "k1", "A", 0}, sjInput{"topic", "k2", "A", 0}, sjInput{"topic", "k2", "A", 1}, sjInput{"topic", "k1", "A", 2},
		sjInput{"topic2", "k1", "B", 3}, sjInput{"topic2", "k2", "B", 3}, sjInput{"topic2", "k2", "B", 501}, sjInput{"topic2", "k1", "B", 501}),
		[]string{"k1@0/500 0+A @0", "k2@0/500 0+A @0", "k2@0/500 0+A+A @1", "k1@0/500 0+A+A @2",
			"k1@0/500 0+A+A-B @3", "k2@0/500 0+A+A-B @3", "k2@500/1000 0-B @501", "k1@500/1000 0-B @501"})

	d = storeDriver(t, fmt.Sprintf(windowedCogroupScript, `s.SlidingWindows.ofTimeDifferenceAndGrace(500, 2000)`, ""))
	expectLines(t, cogroupOutputs(t, d, false, 500,
		sjInput{"topic", "k1", "A", 500}, sjInput{"topic", "k2", "A", 500}, sjInput{"topic", "k2", "A", 501}, sjInput{"topic", "k1", "A", 502},
		sjInput{"topic", "k1", "B", 503}, sjInput{"topic", "k2", "B", 503}, sjInput{"topic", "k2", "B", 504}, sjInput{"topic", "k1", "B", 504}),
		[]string{"k1@0/500 0+A @500", "k2@0/500 0+A @500",
			"k2@501/1001 0+A @501", "k2@1/501 0+A+A @501",
			"k1@501/1001 0+A @502", "k1@2/502 0+A+A @502",
			"k1@501/1001 0+A+B @503", "k1@503/1003 0+B @503", "k1@3/503 0+A+A+B @503",
			"k2@501/1001 0+A+B @503", "k2@502/1002 0+B @503", "k2@3/503 0+A+A+B @503",
			"k2@502/1002 0+B+B @504", "k2@501/1001 0+A+B+B @504", "k2@504/1004 0+B @504", "k2@4/504 0+A+A+B+B @504",
			"k1@503/1003 0+B+B @504", "k1@501/1001 0+A+B+B @504", "k1@504/1004 0+B @504", "k1@4/504 0+A+A+B+B @504"})
}

// Kafka Streams' SessionWindowedCogroupedKStreamImplTest#sessionWindowMixAggregatorsTest:
// merged-away sessions are tombstoned at their end, the merged one carries the merger's
// aggregate.
func TestCogroupSessionWindows(t *testing.T) {
	d := storeDriver(t, fmt.Sprintf(windowedCogroupScript, `s.SessionWindows.ofInactivityGapAndGrace(100, "1d")`,
		`, function(k, a1, a2) return a1 .. "+" .. a2 end`))
	expectLines(t, cogroupOutputs(t, d, true, 0,
		sjInput{"topic", "k1", "A", 0}, sjInput{"topic", "k2", "A", 0}, sjInput{"topic", "k2", "A", 1}, sjInput{"topic", "k1", "A", 2},
		sjInput{"topic2", "k1", "B", 3}, sjInput{"topic2", "k2", "B", 3}, sjInput{"topic2", "k2", "B", 444}, sjInput{"topic2", "k1", "B", 444}),
		[]string{"k1@0/0 0+A @0", "k2@0/0 0+A @0", "k2@0/0 nil @0", "k2@0/1 0+0+A+A @1",
			"k1@0/0 nil @0", "k1@0/2 0+0+A+A @2", "k1@0/2 nil @2", "k1@0/3 0+0+0+A+A-B @3",
			"k2@0/1 nil @1", "k2@0/3 0+0+0+A+A-B @3", "k2@444/444 0-B @444", "k1@444/444 0-B @444"})
}

// Kafka Streams' TimeWindowedCogroupedKStreamImplTest#namedParamShouldSetName.
func TestCogroupWindowedDescribe(t *testing.T) {
	sameDescribe(t, describeOf(t, `b:stream("topic"):groupByKey():cogroup(function(k, v, a) return a end)
  :windowedBy(s.TimeWindows.ofSizeWithNoGrace(500)):aggregate(function() return "" end, {name = "foo"})`), `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])
      --> foo-cogroup-agg-0
    Processor: foo-cogroup-agg-0 (stores: [COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000001])
      --> foo-cogroup-merge
      <-- KSTREAM-SOURCE-0000000000
    Processor: foo-cogroup-merge (stores: [])
      --> none
      <-- foo-cogroup-agg-0

`)
	_, _, err := load(t, prelude+`b:stream("t"):groupByKey():cogroup(function() end):windowedBy(s.SessionWindows.ofInactivityGapWithNoGrace(5)):aggregate(function() end, {})
return b`, nil)
	if err == nil || !strings.Contains(err.Error(), "bad argument #3 to aggregate (function expected") {
		t.Fatalf("a session cogroup without a merger: %v", err)
	}
}
