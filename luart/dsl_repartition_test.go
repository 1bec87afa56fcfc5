package luart

import (
	"strings"
	"testing"
)

func describeOf(t *testing.T, script string) string {
	t.Helper()
	_, b, err := load(t, prelude+script+"\nreturn b", nil)
	if err != nil {
		t.Fatal(err)
	}
	return b.Describe().String()
}

func sameDescribe(t *testing.T, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", got, want)
	}
}

// Kafka Streams' RepartitionTopicNamingTest#EXPECTED_UNOPTIMIZED_TOPOLOGY: three named
// groupings of a re-keyed stream and a stream-stream join whose re-keyed left side is
// repartitioned into <StreamJoined name>-left-repartition.
func TestRepartitionTopicNamingGolden(t *testing.T) {
	got := describeOf(t, `
local source = b:stream("input", {keySerde = "string", valueSerde = "string"})
local mapped = source:map(function(k, v) return k:upper(), v end)
mapped:filter(function(k, v) return k == "B" end):mapValues(function(v) return v:upper() end)
  :process(function() return {process = function() end} end)
local counts = mapped:groupByKey({name = "count-stream"}):count({materialized = {keySerde = "string", valueSerde = "long"}}):toStream()
counts:to("outputTopic_0", {keySerde = "string", valueSerde = "long"})
mapped:groupByKey({name = "aggregate-stream"})
  :aggregate(function() return 0 end, function(k, v, agg) return agg + #v end, {materialized = {keySerde = "string", valueSerde = "integer"}})
  :toStream():to("outputTopic_1", {keySerde = "string", valueSerde = "integer"})
mapped:filter(function() return true end):peek(function() end):groupByKey({name = "reduced-stream"})
  :reduce(function(a, v) return a .. ":" .. v end, {materialized = {keySerde = "string", valueSerde = "string"}})
  :toStream():to("outputTopic_2")
mapped:filter(function(k) return k == "A" end)
  :join(counts, function(v1, v2) return v1 .. ":" .. v2 end, s.JoinWindows.ofTimeDifferenceWithNoGrace("5s"),
    {keySerde = "string", valueSerde = "string", otherValueSerde = "long", storeName = "joined-stream", name = "joined-stream"})
  :to("outputTopicForJoin")`)
	sameDescribe(t, got, `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [input])
      --> KSTREAM-MAP-0000000001
    Processor: KSTREAM-MAP-0000000001 (stores: [])
      --> KSTREAM-FILTER-0000000029, KSTREAM-FILTER-0000000002, KSTREAM-FILTER-0000000020, aggregate-stream-repartition-filter, count-stream-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FILTER-0000000020 (stores: [])
      --> KSTREAM-PEEK-0000000021
      <-- KSTREAM-MAP-0000000001
    Processor: KSTREAM-FILTER-0000000002 (stores: [])
      --> KSTREAM-MAPVALUES-0000000003
      <-- KSTREAM-MAP-0000000001
    Processor: KSTREAM-FILTER-0000000029 (stores: [])
      --> joined-stream-left-repartition-filter
      <-- KSTREAM-MAP-0000000001
    Processor: KSTREAM-PEEK-0000000021 (stores: [])
      --> reduced-stream-repartition-filter
      <-- KSTREAM-FILTER-0000000020
    Processor: KSTREAM-MAPVALUES-0000000003 (stores: [])
      --> KSTREAM-PROCESSOR-0000000004
      <-- KSTREAM-FILTER-0000000002
    Processor: aggregate-stream-repartition-filter (stores: [])
      --> aggregate-stream-repartition-sink
      <-- KSTREAM-MAP-0000000001
    Processor: count-stream-repartition-filter (stores: [])
      --> count-stream-repartition-sink
      <-- KSTREAM-MAP-0000000001
    Processor: joined-stream-left-repartition-filter (stores: [])
      --> joined-stream-left-repartition-sink
      <-- KSTREAM-FILTER-0000000029
    Processor: reduced-stream-repartition-filter (stores: [])
      --> reduced-stream-repartition-sink
      <-- KSTREAM-PEEK-0000000021
    Processor: KSTREAM-PROCESSOR-0000000004 (stores: [])
      --> none
      <-- KSTREAM-MAPVALUES-0000000003
    Sink: aggregate-stream-repartition-sink (topic: aggregate-stream-repartition)
      <-- aggregate-stream-repartition-filter
    Sink: count-stream-repartition-sink (topic: count-stream-repartition)
      <-- count-stream-repartition-filter
    Sink: joined-stream-left-repartition-sink (topic: joined-stream-left-repartition)
      <-- joined-stream-left-repartition-filter
    Sink: reduced-stream-repartition-sink (topic: reduced-stream-repartition)
      <-- reduced-stream-repartition-filter

  Sub-topology: 1
    Source: count-stream-repartition-source (topics: [count-stream-repartition])
      --> KSTREAM-AGGREGATE-0000000007
    Processor: KSTREAM-AGGREGATE-0000000007 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000006])
      --> KTABLE-TOSTREAM-0000000011
      <-- count-stream-repartition-source
    Processor: KTABLE-TOSTREAM-0000000011 (stores: [])
      --> KSTREAM-SINK-0000000012, joined-stream-other-windowed
      <-- KSTREAM-AGGREGATE-0000000007
    Source: joined-stream-left-repartition-source (topics: [joined-stream-left-repartition])
      --> joined-stream-this-windowed
    Processor: joined-stream-other-windowed (stores: [joined-stream-other-join-store])
      --> joined-stream-other-join
      <-- KTABLE-TOSTREAM-0000000011
    Processor: joined-stream-this-windowed (stores: [joined-stream-this-join-store])
      --> joined-stream-this-join
      <-- joined-stream-left-repartition-source
    Processor: joined-stream-other-join (stores: [joined-stream-this-join-store])
      --> joined-stream-merge
      <-- joined-stream-other-windowed
    Processor: joined-stream-this-join (stores: [joined-stream-other-join-store])
      --> joined-stream-merge
      <-- joined-stream-this-windowed
    Processor: joined-stream-merge (stores: [])
      --> KSTREAM-SINK-0000000038
      <-- joined-stream-this-join, joined-stream-other-join
    Sink: KSTREAM-SINK-0000000012 (topic: outputTopic_0)
      <-- KTABLE-TOSTREAM-0000000011
    Sink: KSTREAM-SINK-0000000038 (topic: outputTopicForJoin)
      <-- joined-stream-merge

  Sub-topology: 2
    Source: aggregate-stream-repartition-source (topics: [aggregate-stream-repartition])
      --> KSTREAM-AGGREGATE-0000000014
    Processor: KSTREAM-AGGREGATE-0000000014 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000013])
      --> KTABLE-TOSTREAM-0000000018
      <-- aggregate-stream-repartition-source
    Processor: KTABLE-TOSTREAM-0000000018 (stores: [])
      --> KSTREAM-SINK-0000000019
      <-- KSTREAM-AGGREGATE-0000000014
    Sink: KSTREAM-SINK-0000000019 (topic: outputTopic_1)
      <-- KTABLE-TOSTREAM-0000000018

  Sub-topology: 3
    Source: reduced-stream-repartition-source (topics: [reduced-stream-repartition])
      --> KSTREAM-REDUCE-0000000023
    Processor: KSTREAM-REDUCE-0000000023 (stores: [KSTREAM-REDUCE-STATE-STORE-0000000022])
      --> KTABLE-TOSTREAM-0000000027
      <-- reduced-stream-repartition-source
    Processor: KTABLE-TOSTREAM-0000000027 (stores: [])
      --> KSTREAM-SINK-0000000028
      <-- KSTREAM-REDUCE-0000000023
    Sink: KSTREAM-SINK-0000000028 (topic: outputTopic_2)
      <-- KTABLE-TOSTREAM-0000000027

`)
}

// Kafka Streams' RepartitionTopicNamingTest#shouldKeepRepartitionTopicNameForJoins: both
// re-keyed sides of a named join are repartitioned into <name>-left/-right-repartition.
func TestStreamJoinAfterKeyChangeNamesBothRepartitions(t *testing.T) {
	got := describeOf(t, `
local one = b:stream("topic-one"):selectKey(function(k, v) return k .. v end):filter(function() return true end):peek(function() end)
local two = b:stream("topic-two"):selectKey(function(k, v) return k .. v end):filter(function() return true end):peek(function() end)
one:join(two, function(a, c) return a .. c end, s.JoinWindows.ofTimeDifferenceWithNoGrace("1s"), {name = "my-join"})`)
	for _, want := range []string{"(topic: my-join-left-repartition)", "(topic: my-join-right-repartition)"} {
		if !strings.Contains(got, want) {
			t.Fatalf("describe lacks %s:\n%s", want, got)
		}
	}
}

// Kafka Streams' KStreamImplTest#shouldNotMaterializedKTableFromKStream and
// #shouldSupportKeyChangeKTableFromKStream: toTable takes its processor index before its
// store's, and after a key change repartitions into <processor>-repartition.
func TestToTableAfterKeyChange(t *testing.T) {
	sameDescribe(t, describeOf(t, `b:stream("input"):toTable():toStream():to("output")`), `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [input])
      --> KSTREAM-TOTABLE-0000000001
    Processor: KSTREAM-TOTABLE-0000000001 (stores: [])
      --> KTABLE-TOSTREAM-0000000003
      <-- KSTREAM-SOURCE-0000000000
    Processor: KTABLE-TOSTREAM-0000000003 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-TOTABLE-0000000001
    Sink: KSTREAM-SINK-0000000004 (topic: output)
      <-- KTABLE-TOSTREAM-0000000003

`)
	script := `b:stream("input", {keySerde = "string", valueSerde = "string"})
  :map(function(k, v) return string.byte(k) - string.byte("A"), v end)
  :toTable({materialized = {keySerde = "integer"}})
  :toStream():to("output")`
	sameDescribe(t, describeOf(t, script), `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [input])
      --> KSTREAM-MAP-0000000001
    Processor: KSTREAM-MAP-0000000001 (stores: [])
      --> KSTREAM-FILTER-0000000005
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FILTER-0000000005 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-MAP-0000000001
    Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-TOTABLE-0000000002-repartition)
      <-- KSTREAM-FILTER-0000000005

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-TOTABLE-0000000002-repartition])
      --> KSTREAM-TOTABLE-0000000002
    Processor: KSTREAM-TOTABLE-0000000002 (stores: [])
      --> KTABLE-TOSTREAM-0000000007
      <-- KSTREAM-SOURCE-0000000006
    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])
      --> KSTREAM-SINK-0000000008
      <-- KSTREAM-TOTABLE-0000000002
    Sink: KSTREAM-SINK-0000000008 (topic: output)
      <-- KTABLE-TOSTREAM-0000000007

`)
	d := storeDriver(t, prelude+script+"\nreturn b")
	for _, in := range []sjInput{{"input", "A", "01", 5}, {"input", "B", "02", 100}, {"input", "C", "03", 0},
		{"input", "D", "04", 0}, {"input", "A", "05", 10}, {"input", "A", "06", 8}} {
		if err := d.Pipe(in.topic, []byte(in.key), []byte(in.value), in.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for {
		r, ok := d.ReadOutput("output")
		if !ok {
			break
		}
		got = append(got, itoa(int64(int32(r.Key[0])<<24|int32(r.Key[1])<<16|int32(r.Key[2])<<8|int32(r.Key[3])))+" "+string(r.Value)+" @"+itoa(r.Timestamp))
	}
	expectLines(t, got, []string{"0 01 @5", "1 02 @100", "2 03 @0", "3 04 @0", "0 05 @10", "0 06 @8"})
}

// Kafka Streams' KStreamKTableJoinTest#shouldReuseRepartitionTopicWithGeneratedName and
// #shouldCreateRepartitionTopicsWithUserProvidedName: a stream-table join after a key
// change repartitions the stream into <Joined name or the stream's node>-repartition
// before the join takes its index; joined twice under its node's name the stream keeps
// one repartition, its second one still taking three indices.
func TestStreamTableJoinAfterKeyChangeDescribe(t *testing.T) {
	script := `local a = b:stream("topic", {keySerde = "string", valueSerde = "string"})
local tb = b:table("topic2", {keySerde = "string", valueSerde = "string"})
local tc = b:table("topic3", {keySerde = "string", valueSerde = "string"})
local rekeyed = a:map(function(k, v) return v, k end)
rekeyed:join(tb, function(v1, v2) return v1 .. v2 end%s):to("out-one")
rekeyed:join(tc, function(v1, v2) return v1 .. v2 end%s):to("out-two")`
	sameDescribe(t, describeOf(t, strings.ReplaceAll(script, "%s", "")), `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])
      --> KSTREAM-MAP-0000000007
    Processor: KSTREAM-MAP-0000000007 (stores: [])
      --> KSTREAM-FILTER-0000000009
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FILTER-0000000009 (stores: [])
      --> KSTREAM-SINK-0000000008
      <-- KSTREAM-MAP-0000000007
    Sink: KSTREAM-SINK-0000000008 (topic: KSTREAM-MAP-0000000007-repartition)
      <-- KSTREAM-FILTER-0000000009

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000010 (topics: [KSTREAM-MAP-0000000007-repartition])
      --> KSTREAM-JOIN-0000000011, KSTREAM-JOIN-0000000016
    Processor: KSTREAM-JOIN-0000000011 (stores: [topic2-STATE-STORE-0000000001])
      --> KSTREAM-SINK-0000000012
      <-- KSTREAM-SOURCE-0000000010
    Processor: KSTREAM-JOIN-0000000016 (stores: [topic3-STATE-STORE-0000000004])
      --> KSTREAM-SINK-0000000017
      <-- KSTREAM-SOURCE-0000000010
    Source: KSTREAM-SOURCE-0000000002 (topics: [topic2])
      --> KTABLE-SOURCE-0000000003
    Source: KSTREAM-SOURCE-0000000005 (topics: [topic3])
      --> KTABLE-SOURCE-0000000006
    Sink: KSTREAM-SINK-0000000012 (topic: out-one)
      <-- KSTREAM-JOIN-0000000011
    Sink: KSTREAM-SINK-0000000017 (topic: out-two)
      <-- KSTREAM-JOIN-0000000016
    Processor: KTABLE-SOURCE-0000000003 (stores: [topic2-STATE-STORE-0000000001])
      --> none
      <-- KSTREAM-SOURCE-0000000002
    Processor: KTABLE-SOURCE-0000000006 (stores: [topic3-STATE-STORE-0000000004])
      --> none
      <-- KSTREAM-SOURCE-0000000005

`)
	named := strings.Replace(strings.Replace(script, "%s", `, {name = "first-join", keySerde = "string", valueSerde = "string"}`, 1),
		"%s", `, {name = "second-join", keySerde = "string", valueSerde = "string"}`, 1)
	sameDescribe(t, describeOf(t, named), `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [topic])
      --> KSTREAM-MAP-0000000007
    Processor: KSTREAM-MAP-0000000007 (stores: [])
      --> first-join-repartition-filter, second-join-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: first-join-repartition-filter (stores: [])
      --> first-join-repartition-sink
      <-- KSTREAM-MAP-0000000007
    Processor: second-join-repartition-filter (stores: [])
      --> second-join-repartition-sink
      <-- KSTREAM-MAP-0000000007
    Sink: first-join-repartition-sink (topic: first-join-repartition)
      <-- first-join-repartition-filter
    Sink: second-join-repartition-sink (topic: second-join-repartition)
      <-- second-join-repartition-filter

  Sub-topology: 1
    Source: first-join-repartition-source (topics: [first-join-repartition])
      --> first-join
    Source: KSTREAM-SOURCE-0000000002 (topics: [topic2])
      --> KTABLE-SOURCE-0000000003
    Processor: first-join (stores: [topic2-STATE-STORE-0000000001])
      --> KSTREAM-SINK-0000000012
      <-- first-join-repartition-source
    Sink: KSTREAM-SINK-0000000012 (topic: out-one)
      <-- first-join
    Processor: KTABLE-SOURCE-0000000003 (stores: [topic2-STATE-STORE-0000000001])
      --> none
      <-- KSTREAM-SOURCE-0000000002

  Sub-topology: 2
    Source: second-join-repartition-source (topics: [second-join-repartition])
      --> second-join
    Source: KSTREAM-SOURCE-0000000005 (topics: [topic3])
      --> KTABLE-SOURCE-0000000006
    Processor: second-join (stores: [topic3-STATE-STORE-0000000004])
      --> KSTREAM-SINK-0000000017
      <-- second-join-repartition-source
    Sink: KSTREAM-SINK-0000000017 (topic: out-two)
      <-- second-join
    Processor: KTABLE-SOURCE-0000000006 (stores: [topic3-STATE-STORE-0000000004])
      --> none
      <-- KSTREAM-SOURCE-0000000005

`)
}
