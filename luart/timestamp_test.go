package luart

import (
	"math"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// TestTimestampExtractorRefusesWhatIsNoInt64: a whole number beyond the int64 range (or an
// infinity) is no timestamp; converted anyway it became math.MinInt64 and the record was
// dropped as a negative timestamp, not reported as the extractor's error.
func TestTimestampExtractorRefusesWhatIsNoInt64(t *testing.T) {
	rt, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	extract := func(expr string) (int64, error) {
		t.Helper()
		if err := rt.L.DoString("return function(k, v, r) return " + expr + " end"); err != nil {
			t.Fatal(err)
		}
		return rt.timestampExtractor(rt.pop().(*lua.LFunction))(pipeline.Record{Key: "k", Value: "v"})
	}
	for _, expr := range []string{"1e300", "-1e300", "1/0", "-1/0", "2^63"} {
		if ts, err := extract(expr); err == nil || !strings.Contains(err.Error(), "must return milliseconds as an integer") {
			t.Errorf("%s: timestamp %d, error %v, want the extractor's error", expr, ts, err)
		}
	}
	for expr, want := range map[string]int64{"-2^63": -1 << 63, "1700000000000": 1_700_000_000_000, "-1": -1} {
		if ts, err := extract(expr); err != nil || ts != want {
			t.Errorf("%s: timestamp %d, error %v, want %d", expr, ts, err, want)
		}
	}
}

// TestDurationsRefuseWhatIsNoInt64: a duration in milliseconds is a whole int64; beyond it
// (or past 63 bits once a unit multiplies it) it wrapped around into another duration, and a
// fraction was cut off unseen.
func TestDurationsRefuseWhatIsNoInt64(t *testing.T) {
	for _, v := range []lua.LValue{lua.LNumber(1e300), lua.LNumber(math.Inf(1)), lua.LNumber(math.NaN()), lua.LNumber(1.5),
		lua.LString("9999999999999999h"), lua.LString("5000000000000000d")} {
		if d, err := durationMs(v); err == nil {
			t.Errorf("%v: %d ms, want an error", v, d)
		}
	}
	for v, want := range map[lua.LValue]int64{lua.LNumber(250): 250, lua.LNumber(-5): -5, lua.LString("10s"): 10_000,
		lua.LString("106751991167d"): 106751991167 * 86_400_000} {
		if d, err := durationMs(v); err != nil || d != want {
			t.Errorf("%v: %d ms, error %v, want %d", v, d, err, want)
		}
	}
}

// TestForwardTimestampIsAKafkaTimestamp: ctx:forward's timestamp is milliseconds as a
// non-negative whole number (Kafka Streams' Record refuses a negative one). A string was
// ignored (the record kept its own), 1e300 and math.huge became math.MinInt64, 1.5 became 1.
func TestForwardTimestampIsAKafkaTimestamp(t *testing.T) {
	d := storeDriver(t, prelude+`
local ts = {str = "abc", huge = 1e300, inf = math.huge, frac = 1.5, neg = -5, ok = 7}
b:stream("in"):process({process = function(ctx, k, v) ctx:forward(k, v, {timestamp = ts[v]}) end}):to("out")
return b`)
	for _, v := range []string{"str", "huge", "inf", "frac", "neg"} {
		err := d.Pipe("in", []byte("k"), []byte(v), 1, nil)
		if err == nil || !strings.Contains(err.Error(), "forward: timestamp must be milliseconds") {
			t.Errorf("timestamp %s: %v, want forward's error", v, err)
		}
	}
	if err := d.Pipe("in", []byte("k"), []byte("ok"), 1, nil); err != nil {
		t.Fatal(err)
	}
	first, ok := d.ReadOutput("out")
	if _, more := d.ReadOutput("out"); !ok || more || first.Timestamp != 7 {
		t.Fatalf("out = %+v (%v, more %v), want the one record at 7", first, ok, more)
	}
}

// TestStoreWriteTimestampIsAKafkaTimestamp: a store write's timestamp is milliseconds as a
// non-negative whole number, since its changelog record carries it. A string was ignored
// (the write took the record's timestamp), 1e300 became math.MinInt64, 1.5 became 1.
func TestStoreWriteTimestampIsAKafkaTimestamp(t *testing.T) {
	d := storeDriver(t, prelude+`
b:addStateStore{name = "s", type = "timestampedKeyValue"}
local ts = {str = "abc", huge = 1e300, inf = math.huge, frac = 1.5, neg = -5, ok = 7}
b:stream("in"):process({
  init = function(ctx) end,
  process = function(ctx, k, v) ctx:getStateStore("s"):put(k, v, ts[v]) end,
}, {stores = {"s"}})
return b`)
	for _, v := range []string{"str", "huge", "inf", "frac", "neg"} {
		err := d.Pipe("in", []byte("k"), []byte(v), 1, nil)
		if err == nil || !strings.Contains(err.Error(), "timestamp (argument 3) must be milliseconds as a non-negative integer") {
			t.Errorf("timestamp %s: %v, want put's error", v, err)
		}
	}
	if err := d.Pipe("in", []byte("k"), []byte("ok"), 1, nil); err != nil {
		t.Fatal(err)
	}
	s, err := d.Store("s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if v, ts, found, err := s.Get("k"); err != nil || !found || v != "ok" || ts != 7 {
		t.Fatalf("s[k] = %v at %d (found %v, %v), want ok at 7", v, ts, found, err)
	}
}
