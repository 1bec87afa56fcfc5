package luart

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// sessionKeyText renders a session key as [key@start/end] before the sink.
const sessionKeyText = `:toStream(function(wk, v) return "[" .. wk.key .. "@" .. wk.window.start .. "/" .. wk.window["end"] .. "]" end)`

// sessionInput, for gap 10 and grace 20: two sessions 20 ms apart, a record bridging them
// (exactly gap = 10 from both: merging is inclusive), a record the stream time of 70 makes
// late (34: its session would end before 70 − grace − gap = 40), one just in time (40),
// and a second record at 70 that joins the lone session [70, 70] without a tombstone.
var sessionInput = []struct {
	v  string
	ts int64
}{{"a", 0}, {"b", 20}, {"c", 10}, {"d", 70}, {"e", 34}, {"f", 40}, {"g", 70}}

func runSessions(t *testing.T, d *pipeline.Driver) {
	t.Helper()
	for _, in := range sessionInput {
		if err := d.Pipe("in", []byte("k"), []byte(in.v), in.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll renders each output as "key value @ts", a nil value as <nil>.
func readSessions(d *pipeline.Driver, topic string, value func([]byte) string) []string {
	var got []string
	for {
		r, ok := d.ReadOutput(topic)
		if !ok {
			return got
		}
		v := "<nil>"
		if r.Value != nil {
			v = value(r.Value)
		}
		got = append(got, string(r.Key)+" "+v+" @"+itoa(r.Timestamp))
	}
}

func asText(b []byte) string { return string(b) }

func expectLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSessionAggregateMergesAndDropsLate(t *testing.T) {
	d := storeDriver(t, prelude+`
b:stream("in"):groupByKey()
  :windowedBy(s.SessionWindows.ofInactivityGapAndGrace(10, 20))
  :aggregate(function() return "" end, function(k, v, agg) return agg .. v end,
    function(k, a1, a2, r) return a1 .. a2 end)
  `+sessionKeyText+`
  :to("out")
return b`)
	runSessions(t, d)
	expectLines(t, readSessions(d, "out", asText), []string{
		"[k@0/0] a @0", "[k@20/20] b @20",
		"[k@0/0] <nil> @0", "[k@20/20] <nil> @20", "[k@0/20] abc @20",
		"[k@70/70] d @70",
		"[k@40/40] f @40", "[k@70/70] dg @70",
	})
}

func TestSessionCountAndReduce(t *testing.T) {
	d := storeDriver(t, prelude+`
local g = b:stream("in"):groupByKey():windowedBy(s.SessionWindows.ofInactivityGapAndGrace("10ms", 20))
g:count()`+sessionKeyText+`:to("count", {valueSerde = "long"})
g:reduce(function(agg, v) return agg .. "+" .. v end)`+sessionKeyText+`:to("reduce")
return b`)
	runSessions(t, d)
	expectLines(t, readSessions(d, "count", func(b []byte) string { return itoa(long(b)) }), []string{
		"[k@0/0] 1 @0", "[k@20/20] 1 @20",
		"[k@0/0] <nil> @0", "[k@20/20] <nil> @20", "[k@0/20] 3 @20",
		"[k@70/70] 1 @70",
		"[k@40/40] 1 @40", "[k@70/70] 2 @70",
	})
	expectLines(t, readSessions(d, "reduce", asText), []string{
		"[k@0/0] a @0", "[k@20/20] b @20",
		"[k@0/0] <nil> @0", "[k@20/20] <nil> @20", "[k@0/20] a+b+c @20",
		"[k@70/70] d @70",
		"[k@40/40] f @40", "[k@70/70] d+g @70",
	})
}

func TestSessionStoreNameAndSinkKeyBytes(t *testing.T) {
	d := storeDriver(t, prelude+`
b:stream("in"):groupByKey():windowedBy(s.SessionWindows.ofInactivityGapWithNoGrace(10)):count():toStream():to("out")
return b`)
	if err := d.Pipe("in", []byte("k"), []byte("v"), 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Pipe("in", []byte("k"), []byte("v"), 7, nil); err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			break
		}
		keys = append(keys, r.Key)
	}
	// [key][8-byte BE end][8-byte BE start]: [0,0], its tombstone, then [0,7].
	sk := func(end, start int64) []byte {
		return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64([]byte("k"), uint64(end)), uint64(start))
	}
	want := [][]byte{sk(0, 0), sk(0, 0), sk(7, 0)}
	if len(keys) != len(want) {
		t.Fatalf("keys %x", keys)
	}
	for i := range want {
		if !bytes.Equal(keys[i], want[i]) {
			t.Fatalf("key %d = %x, want %x", i, keys[i], want[i])
		}
	}
	st, err := d.SessionStore("KSTREAM-AGGREGATE-STATE-STORE-0000000001", 0)
	if err != nil {
		t.Fatal(err)
	}
	if v, found, err := st.FetchSession("k", 0, 7); err != nil || !found || v != int64(2) {
		t.Fatalf("stored session [0,7] = %v %v %v", v, found, err)
	}
}

// Emit on close: a session is final once end + gap + grace < watermark (here the stream
// time: the test driver has no backlog); merged-away sessions emit nothing.
func TestSessionEmitOnWindowClose(t *testing.T) {
	d := storeDriver(t, prelude+`
b:stream("in"):groupByKey()
  :windowedBy(s.SessionWindows.ofInactivityGapAndGrace(10, 20))
  :emitStrategy(s.EmitStrategy.onWindowClose())
  :aggregate(function() return "" end, function(k, v, agg) return agg .. v end,
    function(k, a1, a2) return a1 .. a2 end)
  `+sessionKeyText+`
  :to("out")
return b`)
	runSessions(t, d)
	expectLines(t, readSessions(d, "out", asText), []string{"[k@0/20] abc @20"})
	// 40 + 10 + 20 = 70 is not below 70 but below 71; 70 + 30 = 100 below 102 only.
	for _, step := range []struct {
		ts   int64
		want []string
	}{
		{71, []string{"[k@40/40] f @40"}},
		{100, nil},
		{101, []string{"[k@70/70] dg @70"}},
		{102, []string{"[z@71/71] x @71"}},
		{103, nil},
	} {
		if err := d.Pipe("in", []byte("z"), []byte("x"), step.ts, nil); err != nil {
			t.Fatal(err)
		}
		expectLines(t, readSessions(d, "out", asText), step.want)
	}
}

func TestSessionWindowsErrors(t *testing.T) {
	for _, c := range []struct{ script, want string }{
		{`s.SessionWindows.ofInactivityGapWithNoGrace(0)`, "gap must be larger than zero"},
		{`s.SessionWindows.ofInactivityGapAndGrace(10, -1)`, "grace period must not be negative"},
		{`b:stream("in"):groupByKey():windowedBy(s.SessionWindows.ofInactivityGapWithNoGrace(10)):emitStrategy(1)`, "emitStrategy needs"},
	} {
		_, _, err := load(t, prelude+c.script+"\nreturn b", nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.script, err, c.want)
		}
	}
}
