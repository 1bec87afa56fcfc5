package luart

import (
	"encoding/binary"
	"testing"
)

// Kafka Streams' own describe() strings (TopologyTest.java), now through the Lua DSL.
func TestDescribeGoldensThroughDSL(t *testing.T) {
	cases := []struct{ name, script, want string }{
		{"(a) groupByKey count", `b:stream("input-topic"):groupByKey():count()`, `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic])
      --> KSTREAM-AGGREGATE-0000000002
    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000001])
      --> none
      <-- KSTREAM-SOURCE-0000000000

`},
		{"(b) table groupBy count", `b:table("input-topic"):groupBy(function(k, v) return nil, v end):count()`, `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])
      --> KTABLE-SOURCE-0000000002
    Processor: KTABLE-SOURCE-0000000002 (stores: [input-topic-STATE-STORE-0000000000])
      --> KTABLE-SELECT-0000000003
      <-- KSTREAM-SOURCE-0000000001
    Processor: KTABLE-SELECT-0000000003 (stores: [])
      --> KSTREAM-SINK-0000000005
      <-- KTABLE-SOURCE-0000000002
    Sink: KSTREAM-SINK-0000000005 (topic: KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition)
      <-- KTABLE-SELECT-0000000003

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000006 (topics: [KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition])
      --> KTABLE-AGGREGATE-0000000007
    Processor: KTABLE-AGGREGATE-0000000007 (stores: [KTABLE-AGGREGATE-STATE-STORE-0000000004])
      --> none
      <-- KSTREAM-SOURCE-0000000006

`},
		{"(d) word count", `b:stream("streams-plaintext-input")
  :flatMapValues(function(v) return {v} end)
  :groupBy(function(k, v) return v end)
  :count({materialized = "counts-store"})
  :toStream()
  :to("streams-wordcount-output")`, `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [streams-plaintext-input])
      --> KSTREAM-FLATMAPVALUES-0000000001
    Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])
      --> KSTREAM-KEY-SELECT-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])
      --> counts-store-repartition-filter
      <-- KSTREAM-FLATMAPVALUES-0000000001
    Processor: counts-store-repartition-filter (stores: [])
      --> counts-store-repartition-sink
      <-- KSTREAM-KEY-SELECT-0000000002
    Sink: counts-store-repartition-sink (topic: counts-store-repartition)
      <-- counts-store-repartition-filter

  Sub-topology: 1
    Source: counts-store-repartition-source (topics: [counts-store-repartition])
      --> KSTREAM-AGGREGATE-0000000003
    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [counts-store])
      --> KTABLE-TOSTREAM-0000000007
      <-- counts-store-repartition-source
    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])
      --> KSTREAM-SINK-0000000008
      <-- KSTREAM-AGGREGATE-0000000003
    Sink: KSTREAM-SINK-0000000008 (topic: streams-wordcount-output)
      <-- KTABLE-TOSTREAM-0000000007

`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, b, err := load(t, prelude+c.script+"\nreturn b", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Describe().String(); got != c.want {
				t.Fatalf("describe:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

func TestAnonymousGroupByCountNames(t *testing.T) {
	_, b, err := load(t, prelude+`b:stream("in"):flatMapValues(function(v) return {v} end):groupBy(function(k, v) return v end):count()
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := names(b)
	want := "KSTREAM-SOURCE-0000000000 KSTREAM-FLATMAPVALUES-0000000001 KSTREAM-KEY-SELECT-0000000002 " +
		"KSTREAM-FILTER-0000000006 KSTREAM-SOURCE-0000000007 KSTREAM-SINK-0000000005 KSTREAM-AGGREGATE-0000000004"
	if got != want {
		t.Fatalf("names\n got %s\nwant %s", got, want)
	}
}

func long(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }

// KTable groupBy subtracts from the old group: moving a row changes both counts.
func TestTableGroupByCountSubtracts(t *testing.T) {
	d := storeDriver(t, prelude+`
b:table("users", {valueSerde = "json"})
  :groupBy(function(k, v) return v.city, k end)
  :count({materialized = "per-city"})
  :toStream()
  :to("out", {valueSerde = "long"})
return b`)
	for _, in := range []kv{{"ann", `{"city":"oslo"}`}, {"bob", `{"city":"oslo"}`}, {"ann", `{"city":"rome"}`}} {
		pipe(t, d, "users", in.k, in.v)
	}
	var got []string
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			break
		}
		got = append(got, string(r.Key)+"="+itoa(long(r.Value)))
	}
	want := []string{"oslo=1", "oslo=2", "oslo=1", "rome=1"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestTableFilterForwardsTombstones(t *testing.T) {
	d := storeDriver(t, prelude+`
b:table("t"):filter(function(k, v) return v ~= "drop" end):toStream():to("out")
return b`)
	pipe(t, d, "t", "a", "keep")
	pipe(t, d, "t", "a", "drop")
	got := outputs(d, "out")
	if len(got) != 2 || got[0] != (kv{"a", "keep"}) || got[1] != (kv{"a", ""}) {
		t.Fatalf("out = %v", got)
	}
	r := got[1]
	_ = r
}

func TestStreamAggregateAndReduce(t *testing.T) {
	d := storeDriver(t, prelude+`
local g = b:stream("in"):groupByKey()
g:aggregate(function() return "" end, function(k, v, agg) return agg .. v end, {materialized = "concat"}):toStream():to("agg")
b:stream("in2"):groupByKey():reduce(function(agg, v) return agg .. "+" .. v end):toStream():to("red")
return b`)
	for _, v := range []string{"a", "b", "c"} {
		pipe(t, d, "in", "k", v)
		pipe(t, d, "in2", "k", v)
	}
	if got := outputs(d, "agg"); len(got) != 3 || got[2].v != "abc" {
		t.Fatalf("agg = %v", got)
	}
	if got := outputs(d, "red"); len(got) != 3 || got[0].v != "a" || got[2].v != "a+b+c" {
		t.Fatalf("red = %v", got)
	}
}

// Kafka's KStreamWindowAggregateTest.shouldLogAndMeterWhenSkippingExpiredWindow
// (ON_WINDOW_UPDATE): hopping windows of 10 ms advancing by 5 ms with 90 ms grace; seven
// late drops and these updates, in this order.
func TestTimeWindowedAggregateVector(t *testing.T) {
	d := storeDriver(t, prelude+`
b:stream("in")
  :groupByKey()
  :windowedBy(s.TimeWindows.ofSizeAndGrace(10, 90):advanceBy(5))
  :aggregate(function() return "" end, function(k, v, agg) return agg .. "+" .. v end)
  :toStream(function(wk, v) return "[" .. wk.key .. "@" .. wk.window.start .. "/" .. wk.window["end"] .. "]" end)
  :to("out")
return b`)
	for _, ts := range []int64{100, 0, 1, 2, 3, 4, 5, 6, 105, 106} {
		if err := d.Pipe("in", []byte("k"), []byte(itoa(ts)), ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			break
		}
		got = append(got, string(r.Key)+" "+string(r.Value)+" @"+itoa(r.Timestamp))
	}
	want := []string{
		"[k@95/105] +100 @100", "[k@100/110] +100 @100", "[k@5/15] +5 @5", "[k@5/15] +5+6 @6",
		"[k@100/110] +100+105 @105", "[k@105/115] +105 @105", "[k@100/110] +100+105+106 @106", "[k@105/115] +105+106 @106",
	}
	if len(got) != len(want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %q\nwant %q", got, want)
		}
	}
}

func TestWindowedCountKeySerdeIsKafkas(t *testing.T) {
	d := storeDriver(t, prelude+`
b:stream("in"):groupByKey():windowedBy(s.TimeWindows.ofSizeWithNoGrace("1s")):count():toStream():to("out")
return b`)
	if err := d.Pipe("in", []byte("k"), []byte("v"), 2500, nil); err != nil {
		t.Fatal(err)
	}
	r, _ := d.ReadOutput("out")
	// [key bytes][8-byte BE window start] and the count as a long.
	if string(r.Key[:1]) != "k" || long(r.Key[1:]) != 2000 || long(r.Value) != 1 {
		t.Fatalf("key %x value %x", r.Key, r.Value)
	}
}

// Kafka's KStreamKTableJoinProcessor: inner joins drop null keys and values and records
// without a table value; left joins keep them with a nil table value; joiners are chosen by
// arity.
func TestStreamTableJoins(t *testing.T) {
	d := storeDriver(t, prelude+`
local users = b:table("users")
b:stream("orders"):join(users, function(order, user) return order .. " by " .. user end):to("joined")
b:stream("orders2"):leftJoin(users, function(k, order, user, r)
  return k .. ":" .. order .. " by " .. tostring(user) .. "@" .. r.offset
end):to("left")
return b`)
	pipe(t, d, "users", "u1", "ann")
	pipe(t, d, "orders", "u1", "book")
	pipe(t, d, "orders", "u2", "pen")
	pipe(t, d, "orders2", "u1", "cup")
	pipe(t, d, "orders2", "u2", "mug")
	if got := outputs(d, "joined"); len(got) != 1 || got[0] != (kv{"u1", "book by ann"}) {
		t.Fatalf("joined = %v", got)
	}
	if got := outputs(d, "left"); len(got) != 2 || got[0].v != "u1:cup by ann@0" || got[1].v != "u2:mug by nil@1" {
		t.Fatalf("left = %v", got)
	}
	// Table updates never emit.
	pipe(t, d, "users", "u2", "bob")
	if d.Pending("joined") != 0 || d.Pending("left") != 0 {
		t.Fatal("a table update produced join output")
	}
}

// The same test with ON_WINDOW_CLOSE: the same input emits only [k@5/15] +5+6 @6, when the
// watermark (here the stream time: the test driver has no backlog) reaches 105.
func TestTimeWindowedEmitOnWindowClose(t *testing.T) {
	d := storeDriver(t, prelude+`
b:stream("in")
  :groupByKey()
  :windowedBy(s.TimeWindows.ofSizeAndGrace(10, 90):advanceBy(5))
  :emitStrategy(s.EmitStrategy.onWindowClose())
  :aggregate(function() return "" end, function(k, v, agg) return agg .. "+" .. v end)
  :toStream(function(wk, v) return "[" .. wk.key .. "@" .. wk.window.start .. "/" .. wk.window["end"] .. "]" end)
  :to("out")
return b`)
	for _, ts := range []int64{100, 0, 1, 2, 3, 4, 5, 6, 105, 106} {
		if err := d.Pipe("in", []byte("k"), []byte(itoa(ts)), ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	r, ok := d.ReadOutput("out")
	if !ok || string(r.Key) != "[k@5/15]" || string(r.Value) != "+5+6" || r.Timestamp != 6 {
		t.Fatalf("first output %v %q %q @%d", ok, r.Key, r.Value, r.Timestamp)
	}
	if d.Pending("out") != 0 {
		t.Fatalf("%d more outputs, want exactly one final result", d.Pending("out"))
	}
}
