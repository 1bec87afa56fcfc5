package luart

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

type tsOut struct {
	k, v string
	ts   int64
}

func readAll(d *pipeline.Driver, topic string) []tsOut {
	var out []tsOut
	for {
		r, ok := d.ReadOutput(topic)
		if !ok {
			return out
		}
		v := string(r.Value)
		if r.Value == nil {
			v = "<nil>"
		}
		out = append(out, tsOut{string(r.Key), v, r.Timestamp})
	}
}

func pipeAt(t *testing.T, d *pipeline.Driver, k string, v []byte, ts int64) {
	t.Helper()
	if err := d.Pipe("in", []byte(k), v, ts, nil); err != nil {
		t.Fatalf("pipe %s@%d: %v", k, ts, err)
	}
}

func sameOutputs(t *testing.T, what string, got, want []tsOut) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

// Kafka's SuppressTopologyTest (shouldUseNumberingForAnonymousFinalSuppressionNode,
// shouldApplyNameToFinalSuppressionNode) with TimeWindows in place of its SessionWindows,
// which TestDescribeSuppressedSessionCountThroughDSL keeps: the windows change no name, so
// the expected texts are its ANONYMOUS_FINAL_TOPOLOGY and NAMED_FINAL_TOPOLOGY;
// withName("myname") gives the suppress node myname and its store myname-store, and the
// following names move down by the two indices it no longer uses.
func TestSuppressDescribe(t *testing.T) {
	script := func(suppressed string) string {
		return prelude + `b:stream("input")
  :groupBy(function(k, v) return k end, {keySerde = "string", valueSerde = "string"})
  :windowedBy(s.TimeWindows.ofSizeAndGrace(5, 5))
  :count({materialized = {name = "counts", caching = false}})
  :suppress(` + suppressed + `)
  :toStream()
  :map(function(wk, v) return wk.key, v end)
  :to("output-suppressed", {keySerde = "string", valueSerde = "long"})
return b`
	}
	head := groupedCountHead
	anonymous := head + `    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [counts])
      --> KTABLE-SUPPRESS-0000000006
      <-- counts-repartition-source
    Processor: KTABLE-SUPPRESS-0000000006 (stores: [KTABLE-SUPPRESS-STATE-STORE-0000000007])
      --> KTABLE-TOSTREAM-0000000008
      <-- KSTREAM-AGGREGATE-0000000002
    Processor: KTABLE-TOSTREAM-0000000008 (stores: [])
      --> KSTREAM-MAP-0000000009
      <-- KTABLE-SUPPRESS-0000000006
    Processor: KSTREAM-MAP-0000000009 (stores: [])
      --> KSTREAM-SINK-0000000010
      <-- KTABLE-TOSTREAM-0000000008
    Sink: KSTREAM-SINK-0000000010 (topic: output-suppressed)
      <-- KSTREAM-MAP-0000000009

`
	named := head + `    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [counts])
      --> myname
      <-- counts-repartition-source
    Processor: myname (stores: [myname-store])
      --> KTABLE-TOSTREAM-0000000006
      <-- KSTREAM-AGGREGATE-0000000002
    Processor: KTABLE-TOSTREAM-0000000006 (stores: [])
      --> KSTREAM-MAP-0000000007
      <-- myname
    Processor: KSTREAM-MAP-0000000007 (stores: [])
      --> KSTREAM-SINK-0000000008
      <-- KTABLE-TOSTREAM-0000000006
    Sink: KSTREAM-SINK-0000000008 (topic: output-suppressed)
      <-- KSTREAM-MAP-0000000007

`
	for _, c := range []struct{ name, suppressed, want string }{
		{"anonymous", `s.Suppressed.untilWindowCloses(s.Suppressed.BufferConfig.unbounded())`, anonymous},
		{"named", `s.Suppressed.untilWindowCloses(s.Suppressed.BufferConfig.unbounded()):withName("myname")`, named},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, b, err := load(t, script(c.suppressed), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := b.Describe().String(); got != c.want {
				t.Fatalf("describe:\n%s\nwant:\n%s", got, c.want)
			}
			store := "KTABLE-SUPPRESS-STATE-STORE-0000000007"
			if c.name == "named" {
				store = "myname-store"
			}
			found := false
			for _, s := range b.Stores() {
				if s.Name == store {
					found = s.Type == pipeline.KeyValueStoreType && s.Logged
				}
			}
			if !found {
				t.Fatalf("no logged key-value store %s in %v", store, b.Stores())
			}
		})
	}
}

const windowedCountToOut = `
  :toStream(function(wk, v) return "[" .. wk.key .. "@" .. wk.window.start .. "/" .. wk.window["end"] .. "]" end)
  :mapValues(function(v) return tostring(v) end)
  :to("out")
return b`

// Final results: each window once, when the watermark (the driver's stream time) reaches
// end + grace, in window-end order then key order, at the aggregate's timestamp.
func TestSuppressUntilWindowCloses(t *testing.T) {
	d := storeDriver(t, prelude+`b:stream("in")
  :groupByKey()
  :windowedBy(s.TimeWindows.ofSizeAndGrace(10, 5))
  :count()
  :suppress(s.Suppressed.untilWindowCloses(s.Suppressed.BufferConfig.unbounded()))`+windowedCountToOut)
	for _, r := range []struct {
		k  string
		ts int64
	}{{"k", 0}, {"k", 3}, {"j", 5}, {"k", 12}, {"k", 14}} {
		pipeAt(t, d, r.k, []byte("v"), r.ts)
	}
	sameOutputs(t, "before end + grace", readAll(d, "out"), nil)
	pipeAt(t, d, "j", []byte("v"), 15)
	sameOutputs(t, "at 15", readAll(d, "out"), []tsOut{{"[j@0/10]", "1", 5}, {"[k@0/10]", "2", 3}})
	pipeAt(t, d, "k", []byte("v"), 16)
	pipeAt(t, d, "k", []byte("v"), 9) // late: the aggregation drops it
	sameOutputs(t, "at 16", readAll(d, "out"), nil)
	pipeAt(t, d, "x", []byte("v"), 30)
	sameOutputs(t, "at 30", readAll(d, "out"), []tsOut{{"[j@10/20]", "1", 15}, {"[k@10/20]", "3", 16}})
}

// Rate limiting: a key's latest value leaves once its first buffered update is d behind the
// operator's stream time, with the latest update's timestamp; tombstones are forwarded.
func TestSuppressUntilTimeLimit(t *testing.T) {
	d := storeDriver(t, prelude+`b:table("in")
  :suppress(s.Suppressed.untilTimeLimit(10, s.Suppressed.BufferConfig.unbounded()))
  :toStream()
  :to("out")
return b`)
	pipeAt(t, d, "a", []byte("1"), 0)
	pipeAt(t, d, "b", []byte("2"), 1)
	pipeAt(t, d, "a", []byte("3"), 5) // keeps a's buffer time 0
	pipeAt(t, d, "c", []byte("4"), 9)
	sameOutputs(t, "at 9", readAll(d, "out"), nil)
	pipeAt(t, d, "b", nil, 10)
	sameOutputs(t, "at 10", readAll(d, "out"), []tsOut{{"a", "3", 5}})
	pipeAt(t, d, "d", []byte("5"), 11)
	sameOutputs(t, "at 11", readAll(d, "out"), []tsOut{{"b", "<nil>", 10}})
	pipeAt(t, d, "e", []byte("6"), 30)
	sameOutputs(t, "at 30", readAll(d, "out"), []tsOut{{"c", "4", 9}, {"d", "5", 11}})
}

// maxRecords emits the oldest entries early when the buffer is over its limit.
func TestSuppressEmitEarlyWhenFull(t *testing.T) {
	d := storeDriver(t, prelude+`b:table("in")
  :suppress(s.Suppressed.untilTimeLimit("1h", s.Suppressed.BufferConfig.maxRecords(2)))
  :toStream()
  :to("out")
return b`)
	pipeAt(t, d, "a", []byte("1"), 0)
	pipeAt(t, d, "b", []byte("2"), 1)
	sameOutputs(t, "two buffered", readAll(d, "out"), nil)
	pipeAt(t, d, "c", []byte("3"), 2)
	pipeAt(t, d, "a", []byte("4"), 3)
	sameOutputs(t, "over the limit", readAll(d, "out"), []tsOut{{"a", "1", 0}, {"b", "2", 1}})
}

// A strict buffer over its limit stops the application with Kafka Streams' message. Each
// entry is 9 key bytes (key + window start) and 66 value bytes: record context 30, prior
// value 12 (the aggregation reports the initial count 0 as the old value), old value 4
// (same as prior), new value 12, buffer time 8.
func TestSuppressShutDownWhenFull(t *testing.T) {
	d := storeDriver(t, prelude+`b:stream("in")
  :groupByKey()
  :windowedBy(s.TimeWindows.ofSizeWithNoGrace(10))
  :count()
  :suppress(s.Suppressed.untilWindowCloses(s.Suppressed.BufferConfig.maxRecords(1):shutDownWhenFull()))`+windowedCountToOut)
	pipeAt(t, d, "a", []byte("v"), 0)
	err := d.Pipe("in", []byte("b"), []byte("v"), 1, nil)
	want := "KTABLE-SUPPRESS-0000000003 buffer exceeded its max capacity. Currently [2/1] records and [150/9223372036854775807] bytes."
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestSuppressRejects(t *testing.T) {
	for _, c := range []struct{ name, code, want string }{
		{"not windowed", `b:table("in"):suppress(s.Suppressed.untilWindowCloses(s.Suppressed.BufferConfig.unbounded()))`,
			"Invalid topology: Window close time is only defined for windowed computations. Got [root->KSTREAM-SOURCE-0000000001->KTABLE-SOURCE-0000000002]."},
		{"eager final", `s.Suppressed.untilWindowCloses(s.Suppressed.BufferConfig.maxBytes(10))`, "untilWindowCloses needs a strict buffer"},
		{"no buffer config", `s.Suppressed.untilTimeLimit(10)`, "untilTimeLimit needs a buffer config"},
		{"negative limit", `s.Suppressed.BufferConfig.maxRecords(-1)`, "must not be negative"},
		{"not a suppressed", `b:table("in"):suppress(10)`, "suppress needs s.Suppressed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := load(t, prelude+c.code+"\nreturn b", nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// SuppressTopologyTest.shouldUseNumberingForAnonymousFinalSuppressionNode exactly: a
// session-window count with suppression, through the DSL.
func TestDescribeSuppressedSessionCountThroughDSL(t *testing.T) {
	_, b, err := load(t, prelude+`
b:stream("input")
  :groupBy(function(k, v) return k end, {keySerde = "string", valueSerde = "string"})
  :windowedBy(s.SessionWindows.ofInactivityGapAndGrace(5, 5))
  :count({materialized = {name = "counts", caching = false}})
  :suppress(s.Suppressed.untilWindowCloses(s.Suppressed.BufferConfig.unbounded()))
  :toStream()
  :map(function(k, v) return k.key .. "@" .. k.window.start, v end)
  :to("output-suppressed", {valueSerde = "long"})
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := groupedCountHead + `    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [counts])
      --> KTABLE-SUPPRESS-0000000006
      <-- counts-repartition-source
    Processor: KTABLE-SUPPRESS-0000000006 (stores: [KTABLE-SUPPRESS-STATE-STORE-0000000007])
      --> KTABLE-TOSTREAM-0000000008
      <-- KSTREAM-AGGREGATE-0000000002
    Processor: KTABLE-TOSTREAM-0000000008 (stores: [])
      --> KSTREAM-MAP-0000000009
      <-- KTABLE-SUPPRESS-0000000006
    Processor: KSTREAM-MAP-0000000009 (stores: [])
      --> KSTREAM-SINK-0000000010
      <-- KTABLE-TOSTREAM-0000000008
    Sink: KSTREAM-SINK-0000000010 (topic: output-suppressed)
      <-- KSTREAM-MAP-0000000009

`
	if got := b.Describe().String(); got != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", got, want)
	}
}

// groupedCountHead is the describe text of input → groupBy → count({name = "counts"}) up
// to the aggregate, which the suppress goldens share.
const groupedCountHead = `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [input])
      --> KSTREAM-KEY-SELECT-0000000001
    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])
      --> counts-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: counts-repartition-filter (stores: [])
      --> counts-repartition-sink
      <-- KSTREAM-KEY-SELECT-0000000001
    Sink: counts-repartition-sink (topic: counts-repartition)
      <-- counts-repartition-filter

  Sub-topology: 1
    Source: counts-repartition-source (topics: [counts-repartition])
      --> KSTREAM-AGGREGATE-0000000002
`

// Suppressed.BufferConfig.withLoggingDisabled() and withLoggingEnabled(Map): the buffer
// store is not logged, or its changelog topic takes the given settings.
func TestSuppressBufferLogging(t *testing.T) {
	script := prelude + `b:table("in"):suppress(s.Suppressed.untilTimeLimit("1s", s.Suppressed.BufferConfig.maxRecords(5)%s)):toStream():to("out")
return b`
	for _, c := range []struct {
		buffer string
		logged bool
		cfg    map[string]string
	}{
		{"", true, nil},
		{":withLoggingDisabled()", false, nil},
		{`:withLoggingDisabled():withLoggingEnabled({["retention.ms"] = 60000, ["min.insync.replicas"] = "2"})`, true,
			map[string]string{"retention.ms": "60000", "min.insync.replicas": "2"}},
		{`:withLoggingEnabled({["retention.ms"] = 1}):withLoggingDisabled()`, false, nil},
	} {
		_, b, err := load(t, strings.Replace(script, "%s", c.buffer, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, spec := range b.Stores() {
			if spec.Name != "KTABLE-SUPPRESS-STATE-STORE-0000000004" {
				continue
			}
			found = true
			if spec.Logged != c.logged || !reflect.DeepEqual(spec.TopicConfig, c.cfg) {
				t.Errorf("%q: buffer store logged %v with %v, want %v with %v", c.buffer, spec.Logged, spec.TopicConfig, c.logged, c.cfg)
			}
		}
		if !found {
			t.Fatalf("no suppression buffer store in %v", b.Stores())
		}
	}
	_, _, err := load(t, strings.Replace(script, "%s", `:withLoggingEnabled({["retention.ms"] = {}})`, 1), nil)
	if err == nil || !strings.Contains(err.Error(), `changelog topic setting "retention.ms" must be a string, number or boolean`) {
		t.Fatalf("got %v", err)
	}
}
