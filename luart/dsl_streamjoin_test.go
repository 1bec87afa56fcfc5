package luart

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

type sjInput struct {
	topic, key, value string
	ts                int64
}

func pipeSJ(t *testing.T, d *pipeline.Driver, inputs ...sjInput) []string {
	t.Helper()
	for _, in := range inputs {
		if err := d.Pipe(in.topic, []byte(in.key), []byte(in.value), in.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := readSessions(d, "out", asText)
	if got == nil {
		got = []string{}
	}
	return got
}

// The reference's left-join vector through the DSL; the record context comes last: a
// non-joined result's is the record that found its window closed.
func TestStreamLeftJoinDSL(t *testing.T) {
	d := storeDriver(t, prelude+`
local right = b:stream("right")
b:stream("left"):leftJoin(right, function(k, lv, rv, r) return lv .. "+" .. tostring(rv) .. "/" .. tostring(r.topic) end,
  s.JoinWindows.ofTimeDifferenceAndGrace("100ms", 0)):to("out")
return b`)
	expectLines(t, pipeSJ(t, d, sjInput{"left", "0", "A0", 1}, sjInput{"left", "1", "A1", 2}, sjInput{"left", "0", "A0-0", 3}), []string{})
	expectLines(t, pipeSJ(t, d, sjInput{"right", "1", "a1", 3}), []string{"1 A1+a1/right @3"})
	expectLines(t, pipeSJ(t, d, sjInput{"left", "2", "dummy", 401}), []string{"0 A0+nil/left @1", "0 A0-0+nil/left @3"})
	expectLines(t, pipeSJ(t, d, sjInput{"right", "2", "dummy", 401}), []string{"2 dummy+dummy/right @401"})
}

// :before/:after make the window asymmetric; a 3-parameter joiner gets the key.
func TestStreamJoinDSLBoundsAndKey(t *testing.T) {
	d := storeDriver(t, prelude+`
local right = b:stream("right")
b:stream("left"):join(right, function(k, lv, rv) return k .. ":" .. lv .. "+" .. rv end,
  s.JoinWindows.ofTimeDifferenceWithNoGrace(0):before(10):after("5ms")):to("out")
return b`)
	expectLines(t, pipeSJ(t, d, sjInput{"left", "k", "L", 100}), []string{})
	expectLines(t, pipeSJ(t, d, sjInput{"right", "k", "a", 89}, sjInput{"right", "k", "b", 90},
		sjInput{"right", "k", "c", 105}, sjInput{"right", "k", "d", 106}),
		[]string{"k k:L+b @100", "k k:L+c @105"})
}

func TestStreamOuterJoinDSL(t *testing.T) {
	d := storeDriver(t, prelude+`
local right = b:stream("right")
b:stream("left"):outerJoin(right, function(lv, rv) return tostring(lv) .. "+" .. tostring(rv) end,
  s.JoinWindows.ofTimeDifferenceWithNoGrace(10), {name = "oj", storeName = "st"}):to("out")
return b`)
	expectLines(t, pipeSJ(t, d, sjInput{"right", "a", "ra", 5}, sjInput{"left", "b", "lb", 6}), []string{})
	expectLines(t, pipeSJ(t, d, sjInput{"left", "c", "lc", 30}), []string{"a nil+ra @5", "b lb+nil @6"})
}

func TestStreamJoinDSLDescribe(t *testing.T) {
	_, b, err := load(t, prelude+`
b:stream("left"):leftJoin(b:stream("right"), function(lv, rv) return lv end,
  s.JoinWindows.ofTimeDifferenceWithNoGrace(10)):to("out")
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	text := b.Describe().String()
	for _, want := range []string{
		"Processor: KSTREAM-WINDOWED-0000000002 (stores: [KSTREAM-JOINTHIS-0000000004-store])",
		"Processor: KSTREAM-JOINTHIS-0000000004 (stores: [",
		"Processor: KSTREAM-OUTEROTHER-0000000005 (stores: [",
		"KSTREAM-OUTERSHARED-0000000004-store",
		"Processor: KSTREAM-MERGE-0000000006 (stores: [])",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("describe lacks %q:\n%s", want, text)
		}
	}
}

func TestStreamJoinDSLErrors(t *testing.T) {
	for _, c := range []struct{ script, want string }{
		{`b:stream("l"):join(b:stream("r"), function(a, c) return a end)`, "needs join windows"},
		{`b:stream("l"):outerJoin(b:table("r"), function(a, c) return a end, s.JoinWindows.ofTimeDifferenceWithNoGrace(1))`, "outerJoin needs a KStream"},
		{`b:stream("l"):join(b:stream("r"), function(a, c) return a end, s.JoinWindows.ofTimeDifferenceWithNoGrace(1), {nme = "x"})`, "nme"},
		{`s.JoinWindows.ofTimeDifferenceWithNoGrace(1):before(-5)`, "must not be negative"},
	} {
		_, _, err := load(t, prelude+c.script+"\nreturn b", nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.script, err, c.want)
		}
	}
}

// Kafka Streams' KStreamKStreamLeftJoinTest#testLeftJoinWithSpuriousResultFixDisabledOldApi
// and #testLeftJoinDuplicatesWithSpuriousResultFixDisabledOldApi: the deprecated
// JoinWindows.of (and grace) keep the old semantics, where a record without a partner is
// joined with nil at once and again when its partner comes; only the two window stores
// exist, and validate warns.
func TestStreamJoinDeprecatedJoinWindowsOf(t *testing.T) {
	script := prelude + `
local right = b:stream("right")
b:stream("left"):leftJoin(right, function(lv, rv) return lv .. "+" .. tostring(rv) end,
  s.JoinWindows.of("100ms")%s):to("out")
return b`
	for _, c := range []struct {
		grace  string
		inputs []sjInput
		want   []string
	}{
		{"", []sjInput{{"left", "0", "A0", 0}, {"left", "1", "A1", 0}, {"right", "0", "a0", 0}, {"right", "1", "a1", 0}},
			[]string{"0 A0+nil @0", "1 A1+nil @0", "0 A0+a0 @0", "1 A1+a1 @0"}},
		{":grace(10)", []sjInput{{"left", "0", "A0", 0}, {"left", "0", "A0-0", 0}, {"right", "0", "a0", 0}},
			[]string{"0 A0+nil @0", "0 A0-0+nil @0", "0 A0+a0 @0", "0 A0-0+a0 @0"}},
	} {
		rt, b, err := load(t, strings.Replace(script, "%s", c.grace, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		wantWarnings := 1
		if c.grace != "" {
			wantWarnings = 2
		}
		if len(rt.Warnings) != wantWarnings || !strings.Contains(rt.Warnings[0], "pipeline.lua:6: JoinWindows.of(timeDifference) is deprecated since Kafka Streams 3.0") {
			t.Errorf("warnings %q", rt.Warnings)
		}
		if len(b.Stores()) != 2 {
			t.Errorf("stores %v, want only the two window stores", b.Stores())
		}
		if text := b.Describe().String(); strings.Contains(text, "OUTERSHARED") {
			t.Errorf("describe shows an outer-join buffer:\n%s", text)
		}
		expectLines(t, pipeSJ(t, storeDriverFor(t, b), c.inputs...), c.want)
	}
}

// JoinWindows.of's grace is 24 h minus the window size, and grace() is refused on the new
// factories, as in Kafka Streams.
func TestStreamJoinDeprecatedJoinWindowsGrace(t *testing.T) {
	_, b, err := load(t, prelude+`
b:stream("left"):join(b:stream("right"), function(lv, rv) return lv end, s.JoinWindows.of("1h")):to("out")
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range b.Stores() {
		if spec.Retention != 24*3600*1000 {
			t.Errorf("store %s retention %d, want before + after + grace = 24 h", spec.Name, spec.Retention)
		}
	}
	_, _, err = load(t, prelude+`s.JoinWindows.ofTimeDifferenceWithNoGrace(5):grace(1)`, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot call grace() after setting grace value via ofTimeDifferenceAndGrace or ofTimeDifferenceWithNoGrace") {
		t.Fatalf("got %v", err)
	}
}

// Kafka Streams' TopologyTest#streamStreamLeftJoinTopologyWithCustomStoresSuppliers and
// #streamStreamOuterJoinTopologyWithCustomStoresSuppliers: the stores take the suppliers'
// names, and the outer-join buffer the this-side supplier's.
func TestStreamJoinStoreSuppliersDescribe(t *testing.T) {
	for _, c := range []struct{ join, want string }{
		{"leftJoin", `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic1])
      --> KSTREAM-WINDOWED-0000000002
    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic2])
      --> KSTREAM-WINDOWED-0000000003
    Processor: KSTREAM-WINDOWED-0000000002 (stores: [in-memory-join-store])
      --> KSTREAM-JOINTHIS-0000000004
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-WINDOWED-0000000003 (stores: [in-memory-join-store-other])
      --> KSTREAM-OUTEROTHER-0000000005
      <-- KSTREAM-SOURCE-0000000001
    Processor: KSTREAM-JOINTHIS-0000000004 (stores: [in-memory-join-store-other, in-memory-join-store-left-shared-join-store])
      --> KSTREAM-MERGE-0000000006
      <-- KSTREAM-WINDOWED-0000000002
    Processor: KSTREAM-OUTEROTHER-0000000005 (stores: [in-memory-join-store, in-memory-join-store-left-shared-join-store])
      --> KSTREAM-MERGE-0000000006
      <-- KSTREAM-WINDOWED-0000000003
    Processor: KSTREAM-MERGE-0000000006 (stores: [])
      --> none
      <-- KSTREAM-JOINTHIS-0000000004, KSTREAM-OUTEROTHER-0000000005

`},
		{"outerJoin", `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic1])
      --> KSTREAM-WINDOWED-0000000002
    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic2])
      --> KSTREAM-WINDOWED-0000000003
    Processor: KSTREAM-WINDOWED-0000000002 (stores: [in-memory-join-store])
      --> KSTREAM-OUTERTHIS-0000000004
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-WINDOWED-0000000003 (stores: [in-memory-join-store-other])
      --> KSTREAM-OUTEROTHER-0000000005
      <-- KSTREAM-SOURCE-0000000001
    Processor: KSTREAM-OUTEROTHER-0000000005 (stores: [in-memory-join-store-outer-shared-join-store, in-memory-join-store])
      --> KSTREAM-MERGE-0000000006
      <-- KSTREAM-WINDOWED-0000000003
    Processor: KSTREAM-OUTERTHIS-0000000004 (stores: [in-memory-join-store-other, in-memory-join-store-outer-shared-join-store])
      --> KSTREAM-MERGE-0000000006
      <-- KSTREAM-WINDOWED-0000000002
    Processor: KSTREAM-MERGE-0000000006 (stores: [])
      --> none
      <-- KSTREAM-OUTERTHIS-0000000004, KSTREAM-OUTEROTHER-0000000005

`},
	} {
		_, b, err := load(t, prelude+`
local w = s.JoinWindows.ofTimeDifferenceWithNoGrace(100)
b:stream("input-topic1"):`+c.join+`(b:stream("input-topic2"), function(a, c) return a end, w, {
  keySerde = "integer", valueSerde = "string", otherValueSerde = "json",
  thisStoreSupplier = {name = "in-memory-join-store", retention = 200, windowSize = 200, retainDuplicates = true},
  otherStoreSupplier = {name = "in-memory-join-store-other", retention = 200, windowSize = 200, retainDuplicates = true}})
return b`, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Describe().String(); got != c.want {
			t.Errorf("%s:\n%s\nwant:\n%s", c.join, got, c.want)
		}
		serdes := map[string]string{}
		for _, spec := range b.Stores() {
			if spec.Type == pipeline.WindowStoreType {
				serdes[spec.Name] = spec.Serdes.Key.Name() + "/" + spec.Serdes.Value.Name()
			}
		}
		if serdes["in-memory-join-store"] != "integer/string" || serdes["in-memory-join-store-other"] != "integer/json" {
			t.Errorf("%s: the stores take StreamJoined's serdes: %v", c.join, serdes)
		}
	}
}

// StreamJoined's checks (KStreamImplJoin#assertWindowSettings, #assertUniqueStoreNames)
// and its logging settings.
func TestStreamJoinedChecksAndLogging(t *testing.T) {
	join := prelude + `b:stream("l"):join(b:stream("r"), function(a, c) return a end, s.JoinWindows.ofTimeDifferenceAndGrace(10, 5), %s)
return b`
	for _, c := range []struct{ opts, want string }{
		{`{thisStoreSupplier = {name = "x", retention = 25, windowSize = 20}}`, `the store supplier "x" must set retainDuplicates=true, found retainDuplicates=false`},
		{`{otherStoreSupplier = {name = "x", retention = 30, windowSize = 20, retainDuplicates = true}}`, `window settings mismatch: the store supplier "x" (retention 30 ms, window size 20 ms)`},
		{`{thisStoreSupplier = {name = "x", retention = 25, windowSize = 20, retainDuplicates = true}, otherStoreSupplier = {name = "x", retention = 25, windowSize = 20, retainDuplicates = true}}`, `both store suppliers are named "x"`},
		{`{thisStoreSupplier = {retention = 25}}`, "thisStoreSupplier needs a name"},
		{`{logging = "yes"}`, "logging must be true, false or a table of changelog topic settings"},
	} {
		_, _, err := load(t, strings.Replace(join, "%s", c.opts, 1), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.opts, err, c.want)
		}
	}
	for _, c := range []struct {
		opts   string
		logged bool
		cfg    map[string]string
	}{
		{`{logging = false}`, false, nil},
		{`{logging = {["retention.ms"] = 1000, ["cleanup.policy"] = "delete"}}`, true, map[string]string{"retention.ms": "1000", "cleanup.policy": "delete"}},
	} {
		_, b, err := load(t, strings.Replace(join, "%s", c.opts, 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range b.Stores() {
			if spec.Logged != c.logged || !reflect.DeepEqual(spec.TopicConfig, c.cfg) {
				t.Errorf("%s: store %s logged %v with %v", c.opts, spec.Name, spec.Logged, spec.TopicConfig)
			}
		}
	}
}

// A late partner still joins a record whose non-joined result is out, as in Kafka Streams
// 4.4: the window store holds the record until its retention.
func TestStreamLeftJoinLatePartnerDSL(t *testing.T) {
	d := storeDriver(t, prelude+`
b:stream("left"):leftJoin(b:stream("right"), function(lv, rv) return lv .. "+" .. tostring(rv) end,
  s.JoinWindows.ofTimeDifferenceWithNoGrace(5)):to("out")
return b`)
	expectLines(t, pipeSJ(t, d, sjInput{"left", "a", "A", 10}, sjInput{"left", "b", "B", 17}), []string{"a A+nil @10"})
	expectLines(t, pipeSJ(t, d, sjInput{"right", "a", "x", 12}, sjInput{"right", "b", "y", 18}), []string{"a A+x @12", "b B+y @18"})
}
