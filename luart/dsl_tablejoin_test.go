package luart

import (
	"strings"
	"testing"
)

// tableJoinScript joins two source tables three ways, one output topic per join kind.
const tableJoinScript = `local b = require("stoat").builder()
local l, r = b:table("left"), b:table("right")
l:join(r, function(lv, rv) return lv .. "+" .. rv end):toStream():to("inner")
l:leftJoin(r, function(lv, rv) return lv .. "+" .. tostring(rv) end):toStream():to("left")
l:outerJoin(r, function(k, lv, rv, rc) return k .. ":" .. tostring(lv) .. "+" .. tostring(rv) end):toStream():to("outer")
return b
`

// runTableJoinTests runs one Lua test file against tableJoinScript and expects it to pass.
func runTableJoinTests(t *testing.T, script, tests string) {
	t.Helper()
	_, passed, failed, out := runLuaTests(t, map[string]string{"pipeline.lua": script, "pipeline_test.lua": tests}, TestOptions{})
	if failed != 0 || passed == 0 {
		t.Fatalf("passed %d failed %d, output:\n%s", passed, failed, out)
	}
}

// Kafka's KTableKTableInnerJoin, KTableKTableLeftJoin and KTableKTableOuterJoin: inner, left (with the mirrored right side) and outer joins, with updates
// and deletes on either side, result timestamp max(thisTs, otherTs) (this side's alone when
// the other is absent), and a deleted row whose partner exists giving a tombstone.
func TestTableTableJoinKinds(t *testing.T) {
	runTableJoinTests(t, tableJoinScript, `local t = require("stoat.test")
local function lines(topic)
  local out = {}
  for _, r in ipairs(topic:readRecordsToList()) do
    out[#out + 1] = r.key .. "=" .. tostring(r.value) .. "@" .. r.timestamp
  end
  return out
end
t.test("all kinds", function()
  local d = t.driver("pipeline.lua")
  local l, r = d:createInputTopic("left"), d:createInputTopic("right")
  local inner, left, outer = d:createOutputTopic("inner"), d:createOutputTopic("left"), d:createOutputTopic("outer")
  l:pipeInput("a", "A1", {timestamp = 10})
  r:pipeInput("a", "X1", {timestamp = 5})
  r:pipeInput("b", "Y1", {timestamp = 20})
  l:pipeInput("a", "A2", {timestamp = 15})
  r:pipeInput("a", "X2", {timestamp = 30})
  r:pipeInput("a", nil, {timestamp = 31})
  l:pipeInput("a", nil, {timestamp = 32})
  r:pipeInput("b", nil, {timestamp = 40})
  l:pipeInput("c", nil, {timestamp = 41})
  r:pipeInput("a", "X3", {timestamp = 50})
  l:pipeInput("a", "A3", {timestamp = 45})
  l:pipeInput("a", nil, {timestamp = 60})
  t.assertEquals(lines(inner), {
    "a=A1+X1@10", "a=A2+X1@15", "a=A2+X2@30", "a=nil@31",
    "a=A3+X3@50", "a=nil@60",
  })
  t.assertEquals(lines(left), {
    "a=A1+nil@10", "a=A1+X1@10", "a=A2+X1@15", "a=A2+X2@30", "a=A2+nil@31", "a=nil@32",
    "a=A3+X3@50", "a=nil@60",
  })
  t.assertEquals(lines(outer), {
    "a=a:A1+nil@10", "a=a:A1+X1@10", "b=b:nil+Y1@20", "a=a:A2+X1@15", "a=a:A2+X2@30",
    "a=a:A2+nil@31", "a=nil@32", "b=nil@40", "a=a:nil+X3@50", "a=a:A3+X3@50", "a=a:nil+X3@60",
  })
end)
`)
}

// A downstream operator that needs old values (groupBy) gets them through the join from
// both sides: an update of either side replaces the joined row instead of adding one.
func TestTableTableJoinOldValues(t *testing.T) {
	runTableJoinTests(t, `local b = require("stoat").builder()
local j = b:table("left"):join(b:table("right"), function(lv, rv) return lv .. rv end)
j:groupBy(function(k, v) return "all", v end):count():toStream():to("counts", {valueSerde = "long"})
return b
`, `local t = require("stoat.test")
t.test("old values", function()
  local d = t.driver("pipeline.lua")
  local l, r = d:createInputTopic("left"), d:createInputTopic("right")
  local counts = d:createOutputTopic("counts", {valueSerde = "long"})
  l:pipeInput("a", "A", {timestamp = 1})
  r:pipeInput("a", "X", {timestamp = 2})
  l:pipeInput("b", "B", {timestamp = 3})
  r:pipeInput("b", "Y", {timestamp = 4})
  l:pipeInput("a", "A2", {timestamp = 5})
  r:pipeInput("b", "Y2", {timestamp = 6})
  r:pipeInput("a", nil, {timestamp = 7})
  t.assertEquals(counts:readValuesToList(), {1, 2, 2, 2, 1})
end)
`)
}

// A materialized result keeps the joined rows in its store, can be queried and joined again.
func TestTableTableJoinMaterialized(t *testing.T) {
	runTableJoinTests(t, `local b = require("stoat").builder()
local l, r = b:table("left"), b:table("right")
local j = l:leftJoin(r, function(lv, rv) return lv .. "+" .. tostring(rv) end, {name = "lr", materialized = "joined"})
assert(j:queryableStoreName() == "joined")
j:join(b:table("third"), function(jv, tv) return jv .. "+" .. tv end):toStream():to("out")
return b
`, `local t = require("stoat.test")
t.test("store and chained join", function()
  local d = t.driver("pipeline.lua")
  d:createInputTopic("left"):pipeInput("a", "A", {timestamp = 1})
  d:createInputTopic("third"):pipeInput("a", "T", {timestamp = 9})
  d:createInputTopic("right"):pipeInput("a", "X", {timestamp = 3})
  local v, ts = d:getKeyValueStore("joined"):get("a")
  t.assertEquals({v, ts}, {"A+X", 3})
  t.assertEquals(d:createOutputTopic("out"):readKeyValuesToList(), {
    {key = "a", value = "A+nil+T"}, {key = "a", value = "A+X+T"},
  })
  d:createInputTopic("left"):pipeInput("a", nil, {timestamp = 4})
  t.assertEquals(d:getKeyValueStore("joined"):get("a"), nil)
end)
`)
	_, _, err := load(t, prelude+`b:table("l"):outerJoin(b:stream("s"), function(a, c) return a end)
return b`, nil)
	if err == nil || !strings.Contains(err.Error(), "outerJoin needs a KTable") {
		t.Fatalf("joining a stream: %v", err)
	}
}

// Names in Kafka Streams' order (KTableImpl#doJoin): merge first, then this and other side;
// each side's processor is connected to the other side's store. The merge node lists this
// side first, as in KStreamImplTest#shouldSupportTableTableJoinWithKStreamToKTable: the
// sides are linked in that order, and a TreeSet keeps the order of the sizes at the time.
func TestTableTableJoinDescribe(t *testing.T) {
	_, b, err := load(t, prelude+`b:table("left"):join(b:table("right"), function(a, c) return a end):toStream():to("out")
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000001 (topics: [left])
      --> KTABLE-SOURCE-0000000002
    Source: KSTREAM-SOURCE-0000000004 (topics: [right])
      --> KTABLE-SOURCE-0000000005
    Processor: KTABLE-SOURCE-0000000002 (stores: [left-STATE-STORE-0000000000])
      --> KTABLE-JOINTHIS-0000000007
      <-- KSTREAM-SOURCE-0000000001
    Processor: KTABLE-SOURCE-0000000005 (stores: [right-STATE-STORE-0000000003])
      --> KTABLE-JOINOTHER-0000000008
      <-- KSTREAM-SOURCE-0000000004
    Processor: KTABLE-JOINOTHER-0000000008 (stores: [left-STATE-STORE-0000000000])
      --> KTABLE-MERGE-0000000006
      <-- KTABLE-SOURCE-0000000005
    Processor: KTABLE-JOINTHIS-0000000007 (stores: [right-STATE-STORE-0000000003])
      --> KTABLE-MERGE-0000000006
      <-- KTABLE-SOURCE-0000000002
    Processor: KTABLE-MERGE-0000000006 (stores: [])
      --> KTABLE-TOSTREAM-0000000009
      <-- KTABLE-JOINTHIS-0000000007, KTABLE-JOINOTHER-0000000008
    Processor: KTABLE-TOSTREAM-0000000009 (stores: [])
      --> KSTREAM-SINK-0000000010
      <-- KTABLE-MERGE-0000000006
    Sink: KSTREAM-SINK-0000000010 (topic: out)
      <-- KTABLE-TOSTREAM-0000000009

`
	if got := b.Describe().String(); got != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", got, want)
	}
	_, b, err = load(t, prelude+`b:table("l"):outerJoin(b:table("r"), function(a, c) return a end, {name = "j", materialized = {keySerde = "string"}})
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := names(b)
	if wantNames := "KSTREAM-SOURCE-0000000001 KTABLE-SOURCE-0000000002 KSTREAM-SOURCE-0000000004 KTABLE-SOURCE-0000000005 j-join-this j-join-other j"; got != wantNames {
		t.Fatalf("names\n got %s\nwant %s", got, wantNames)
	}
	if !strings.Contains(b.Describe().String(), "Processor: j (stores: [KTABLE-MERGE-STATE-STORE-0000000006])") {
		t.Fatalf("the unnamed materialized store takes the first index:\n%s", b.Describe())
	}
}

// Kafka Streams' KTableImplTest#testStateStore through the DSL: a table joined with
// another's mapValues-then-filter result reads that result's rows through its parents, so
// only the two source tables have stores; an unmaterialized join can be joined again.
func TestTableJoinWithDerivedTables(t *testing.T) {
	_, b, err := load(t, prelude+`local t1, t2 = b:table("topic1"), b:table("topic2")
local even = t1:mapValues(function(v) return tonumber(v) end):filter(function(k, v) return v % 2 == 0 end)
t2:join(even, function(v1, v2) return v1 .. v2 end):toStream():to("out")
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Stores()) != 2 {
		t.Fatalf("stores %v, want the two source tables' only", b.Stores())
	}
	runTableJoinTests(t, `local b = require("stoat").builder()
local t1, t2 = b:table("topic1"), b:table("topic2")
local even = t1:mapValues(function(v) return tonumber(v) end):filter(function(k, v) return v % 2 == 0 end)
local j = t2:join(even, function(v1, v2) return v1 .. v2 end)
j:toStream():to("out")
j:leftJoin(b:table("third"), function(jv, tv) return jv .. "/" .. tostring(tv) end):toStream():to("chained")
return b
`, `local t = require("stoat.test")
local function lines(topic)
  local out = {}
  for _, r in ipairs(topic:readRecordsToList()) do
    out[#out + 1] = r.key .. "=" .. tostring(r.value) .. "@" .. r.timestamp
  end
  return out
end
t.test("rows of derived tables", function()
  local d = t.driver("pipeline.lua")
  local t1, t2, third = d:createInputTopic("topic1"), d:createInputTopic("topic2"), d:createInputTopic("third")
  t1:pipeInput("a", "2", {timestamp = 1})
  t2:pipeInput("a", "X", {timestamp = 2})
  t1:pipeInput("a", "3", {timestamp = 3})
  t2:pipeInput("a", "Y", {timestamp = 4})
  t1:pipeInput("a", "4", {timestamp = 5})
  third:pipeInput("a", "T", {timestamp = 6})
  t.assertEquals(lines(d:createOutputTopic("out")), {"a=X2@2", "a=nil@3", "a=Y4@5"})
  t.assertEquals(lines(d:createOutputTopic("chained")), {"a=X2/nil@2", "a=nil@3", "a=Y4/nil@5", "a=Y4/T@6"})
end)
`)
}

// A stream-table join takes Joined's otherValueSerde, the table's value serde: the join
// reads the table's values as it holds them, so a serde other than the table's is refused.
func TestStreamTableJoinOtherValueSerde(t *testing.T) {
	runTableJoinTests(t, `local b = require("stoat").builder()
local tbl = b:table("right", {valueSerde = "json"})
b:stream("in"):join(tbl, function(v, tv) return v .. "+" .. tv.n end, {otherValueSerde = "json"}):to("out")
return b
`, `local t = require("stoat.test")
t.test("joined", function()
  local d = t.driver("pipeline.lua")
  d:createInputTopic("right", {valueSerde = "json"}):pipeInput("k", {n = "1"})
  d:createInputTopic("in"):pipeInput("k", "v")
  t.assertEquals(d:createOutputTopic("out"):readValuesToList(), {"v+1"})
end)
`)
	msg := loadError(t, prelude+`local tbl = b:table("right", {valueSerde = "json"})
b:stream("in"):leftJoin(tbl, function(v, tv) return v end, {otherValueSerde = "string"})
return b`)
	if !strings.Contains(msg, "otherValueSerde string contradicts the table's value serde json") {
		t.Fatalf("error: %s", msg)
	}
}
