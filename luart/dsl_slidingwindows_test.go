package luart

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// slidingKeyText renders a windowed key as key@start/end before the sink.
const slidingKeyText = `:toStream(function(wk, v) return wk.key .. "@" .. wk.window.start .. "/" .. wk.window["end"] end)`

type slidingIn struct {
	k, v string
	ts   int64
}

// slidingDriver runs windowedBy(windows) then op (":aggregate(...)" etc.) into "out".
func slidingDriver(t *testing.T, windows, op string, in []slidingIn) *pipeline.Driver {
	t.Helper()
	d := storeDriver(t, prelude+`
local agg = function(k, v, a) return a .. "+" .. v end
b:stream("in"):groupByKey():windowedBy(`+windows+`)`+op+slidingKeyText+`:to("out")
return b`)
	for _, r := range in {
		if err := d.Pipe("in", []byte(r.k), []byte(r.v), r.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

type slidingOut struct {
	key, value string
	ts         int64
}

func slidingOutputs(d *pipeline.Driver) []slidingOut {
	var out []slidingOut
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			return out
		}
		out = append(out, slidingOut{string(r.Key), string(r.Value), r.Timestamp})
	}
}

// latestPerWindow keeps the last output of each window, as Kafka's tests collect them.
func latestPerWindow(outs []slidingOut) []string {
	last := map[string]slidingOut{}
	for _, o := range outs {
		last[o.key] = o
	}
	var lines []string
	for _, o := range last {
		lines = append(lines, fmt.Sprintf("%s %s @%d", o.key, o.value, o.ts))
	}
	sort.Strings(lines)
	return lines
}

// byKeyThenStart orders outputs as Kafka's large-input tests do (a stable sort by key, then
// window start).
func byKeyThenStart(outs []slidingOut) []string {
	start := func(o slidingOut) (string, int64) {
		var k string
		var s, e int64
		fmt.Sscanf(strings.Replace(strings.Replace(o.key, "@", " ", 1), "/", " ", 1), "%s %d %d", &k, &s, &e)
		return k, s
	}
	sort.SliceStable(outs, func(i, j int) bool {
		ki, si := start(outs[i])
		kj, sj := start(outs[j])
		if ki != kj {
			return ki < kj
		}
		return si < sj
	})
	return slidingLines(outs)
}

func slidingLines(outs []slidingOut) []string {
	var lines []string
	for _, o := range outs {
		lines = append(lines, fmt.Sprintf("%s %s @%d", o.key, o.value, o.ts))
	}
	return lines
}

func sortedLines(lines ...string) []string {
	sort.Strings(lines)
	return lines
}

const stringAgg = `:aggregate(function() return "0" end, agg)`

// KStreamSlidingWindowAggregateTest#testAggregateSmallInput.
func TestSlidingAggregateSmallInput(t *testing.T) {
	d := slidingDriver(t, `s.SlidingWindows.ofTimeDifferenceAndGrace(10, 50)`, stringAgg,
		[]slidingIn{{"A", "1", 10}, {"A", "2", 15}, {"A", "3", 20}, {"A", "4", 22}, {"A", "5", 30}})
	expectLines(t, latestPerWindow(slidingOutputs(d)), sortedLines(
		"A@0/10 0+1 @10", "A@5/15 0+1+2 @15", "A@10/20 0+1+2+3 @20", "A@11/21 0+2+3 @20",
		"A@12/22 0+2+3+4 @22", "A@16/26 0+3+4 @22", "A@20/30 0+3+4+5 @30", "A@21/31 0+4+5 @30",
		"A@23/33 0+5 @30"))
}

// KStreamSlidingWindowAggregateTest#testReduceSmallInput.
func TestSlidingReduceSmallInput(t *testing.T) {
	d := slidingDriver(t, `s.SlidingWindows.ofTimeDifferenceAndGrace("10ms", 50)`,
		`:reduce(function(a, v) return a .. "+" .. v end)`,
		[]slidingIn{{"A", "1", 10}, {"A", "2", 14}, {"A", "3", 15}, {"A", "4", 22}, {"A", "5", 26}, {"A", "6", 30}})
	expectLines(t, latestPerWindow(slidingOutputs(d)), sortedLines(
		"A@0/10 1 @10", "A@4/14 1+2 @14", "A@5/15 1+2+3 @15", "A@11/21 2+3 @15",
		"A@12/22 2+3+4 @22", "A@15/25 3+4 @22", "A@16/26 4+5 @26", "A@20/30 4+5+6 @30",
		"A@23/33 5+6 @30", "A@27/37 6 @30"))
}

// Counts of the windows of TestSlidingAggregateSmallInput (derived: the number of records
// in each of its final aggregates).
func TestSlidingCount(t *testing.T) {
	d := storeDriver(t, prelude+`
b:stream("in"):groupByKey():windowedBy(s.SlidingWindows.ofTimeDifferenceAndGrace(10, 50)):count()`+slidingKeyText+`:to("out", {valueSerde = "long"})
return b`)
	for _, r := range []slidingIn{{"A", "1", 10}, {"A", "2", 15}, {"A", "3", 20}, {"A", "4", 22}, {"A", "5", 30}} {
		if err := d.Pipe("in", []byte(r.k), []byte(r.v), r.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	last := map[string]string{}
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			break
		}
		last[string(r.Key)] = fmt.Sprint(long(r.Value))
	}
	got := fmt.Sprint(last)
	want := "map[A@0/10:1 A@10/20:3 A@11/21:2 A@12/22:3 A@16/26:2 A@20/30:3 A@21/31:2 A@23/33:1 A@5/15:2]"
	if got != want {
		t.Fatalf("counts %s, want %s", got, want)
	}
}

// KStreamSlidingWindowAggregateTest#testAggregateLargeInput, keys A to C.
func TestSlidingAggregateLargeInput(t *testing.T) {
	d := slidingDriver(t, `s.SlidingWindows.ofTimeDifferenceAndGrace(10, 50)`, stringAgg, []slidingIn{
		{"A", "1", 10}, {"A", "2", 20}, {"A", "3", 22}, {"A", "4", 15},
		{"B", "1", 12}, {"B", "2", 13}, {"B", "3", 18}, {"B", "4", 19}, {"B", "5", 25}, {"B", "6", 14},
		{"C", "1", 11}, {"C", "2", 15}, {"C", "3", 16}, {"C", "4", 21}, {"C", "5", 23},
	})
	expectLines(t, byKeyThenStart(slidingOutputs(d)), []string{
		"A@0/10 0+1 @10", "A@5/15 0+1+4 @15", "A@10/20 0+1+2 @20", "A@10/20 0+1+2+4 @20",
		"A@11/21 0+2 @20", "A@11/21 0+2+4 @20", "A@12/22 0+2+3 @22", "A@12/22 0+2+3+4 @22",
		"A@16/26 0+2+3 @22", "A@21/31 0+3 @22",
		"B@2/12 0+1 @12", "B@3/13 0+1+2 @13", "B@4/14 0+1+2+6 @14", "B@8/18 0+1+2+3 @18",
		"B@8/18 0+1+2+3+6 @18", "B@9/19 0+1+2+3+4 @19", "B@9/19 0+1+2+3+4+6 @19",
		"B@13/23 0+2 @13", "B@13/23 0+2+3 @18", "B@13/23 0+2+3+4 @19", "B@13/23 0+2+3+4+6 @19",
		"B@14/24 0+3 @18", "B@14/24 0+3+4 @19", "B@14/24 0+3+4+6 @19", "B@15/25 0+3+4+5 @25",
		"B@19/29 0+4 @19", "B@19/29 0+4+5 @25", "B@20/30 0+5 @25",
		"C@1/11 0+1 @11", "C@5/15 0+1+2 @15", "C@6/16 0+1+2+3 @16", "C@11/21 0+1+2+3+4 @21",
		"C@12/22 0+2 @15", "C@12/22 0+2+3 @16", "C@12/22 0+2+3+4 @21", "C@13/23 0+2+3+4+5 @23",
		"C@16/26 0+3 @16", "C@16/26 0+3+4 @21", "C@16/26 0+3+4+5 @23", "C@17/27 0+4 @21",
		"C@17/27 0+4+5 @23", "C@22/32 0+5 @23",
	})
}

// KStreamSlidingWindowAggregateTest#testEarlyRecordsSmallInput and
// #testEarlyRecordsRepeatedInput: records before d share the window [0, d].
func TestSlidingEarlyRecords(t *testing.T) {
	d := slidingDriver(t, `s.SlidingWindows.ofTimeDifferenceAndGrace(50, 200)`, stringAgg,
		[]slidingIn{{"A", "1", 0}, {"A", "2", 5}, {"A", "3", 6}, {"A", "4", 3}, {"A", "5", 13}, {"A", "6", 10}})
	expectLines(t, latestPerWindow(slidingOutputs(d)), sortedLines(
		"A@0/50 0+1+2+3+4+5+6 @13", "A@1/51 0+2+3+4+5+6 @13", "A@4/54 0+2+3+5+6 @13",
		"A@6/56 0+3+5+6 @13", "A@7/57 0+5+6 @13", "A@11/61 0+5 @13"))

	d = slidingDriver(t, `s.SlidingWindows.ofTimeDifferenceAndGrace(5, 20)`, stringAgg,
		[]slidingIn{{"A", "1", 0}, {"A", "2", 2}, {"A", "3", 4}, {"A", "4", 0}, {"A", "5", 2}, {"A", "6", 2}, {"A", "7", 0}})
	expectLines(t, latestPerWindow(slidingOutputs(d)), sortedLines(
		"A@0/5 0+1+2+3+4+5+6+7 @4", "A@1/6 0+2+3+5+6 @4", "A@3/8 0+3 @4"))
}

// KStreamSlidingWindowAggregateTest#testEarlyRecordsLargeInput.
func TestSlidingEarlyRecordsLargeInput(t *testing.T) {
	d := slidingDriver(t, `s.SlidingWindows.ofTimeDifferenceAndGrace(10, 50)`, stringAgg, []slidingIn{
		{"E", "1", 0}, {"E", "3", 5}, {"E", "4", 6}, {"E", "2", 3}, {"E", "6", 13}, {"E", "5", 10},
		{"E", "7", 4}, {"E", "8", 2}, {"E", "9", 15},
	})
	expectLines(t, byKeyThenStart(slidingOutputs(d)), []string{
		"E@0/10 0+1 @0", "E@0/10 0+1+3 @5", "E@0/10 0+1+3+4 @6", "E@0/10 0+1+3+4+2 @6",
		"E@0/10 0+1+3+4+2+5 @10", "E@0/10 0+1+3+4+2+5+7 @10", "E@0/10 0+1+3+4+2+5+7+8 @10",
		"E@1/11 0+3 @5", "E@1/11 0+3+4 @6", "E@1/11 0+3+4+2 @6", "E@1/11 0+3+4+2+5 @10",
		"E@1/11 0+3+4+2+5+7 @10", "E@1/11 0+3+4+2+5+7+8 @10",
		"E@3/13 0+3+4+2+6 @13", "E@3/13 0+3+4+2+6+5 @13", "E@3/13 0+3+4+2+6+5+7 @13",
		"E@4/14 0+3+4 @6", "E@4/14 0+3+4+6 @13", "E@4/14 0+3+4+6+5 @13", "E@4/14 0+3+4+6+5+7 @13",
		"E@5/15 0+3+4+6+5 @13", "E@5/15 0+3+4+6+5+9 @15",
		"E@6/16 0+4 @6", "E@6/16 0+4+6 @13", "E@6/16 0+4+6+5 @13", "E@6/16 0+4+6+5+9 @15",
		"E@7/17 0+6 @13", "E@7/17 0+6+5 @13", "E@7/17 0+6+5+9 @15",
		"E@11/21 0+6 @13", "E@11/21 0+6+9 @15", "E@14/24 0+9 @15",
	})
}

// KStreamSlidingWindowAggregateTest#testNoGracePeriodSmallInput.
func TestSlidingNoGrace(t *testing.T) {
	d := slidingDriver(t, `s.SlidingWindows.ofTimeDifferenceWithNoGrace(50)`, stringAgg,
		[]slidingIn{{"A", "1", 100}, {"A", "2", 105}, {"A", "3", 106}, {"A", "4", 103}, {"A", "5", 113}, {"A", "6", 110}})
	expectLines(t, latestPerWindow(slidingOutputs(d)), sortedLines(
		"A@50/100 0+1 @100", "A@55/105 0+1+2 @105", "A@56/106 0+1+2+3+4 @106",
		"A@63/113 0+1+2+3+4+5+6 @113", "A@101/151 0+2+3+4+5+6 @113", "A@104/154 0+2+3+5+6 @113",
		"A@106/156 0+3+5+6 @113", "A@107/157 0+5+6 @113", "A@111/161 0+5 @113"))
}

// Derived from Kafka's KStreamSlidingWindowAggregate rules: with d = 10 and no grace, after stream time 100 (close time 100) a
// record at 89 (89 + 10 < 100) is dropped whole (step 3). One at 90 passes step 3: it is
// added to the window [90, 100] of the record at 100, its own left window [80, 90] ends
// before the close time and is dropped, and its right window [91, 101] is created holding
// only the record at 100 (step 6c), at that record's timestamp.
func TestSlidingDropsLateRecords(t *testing.T) {
	d := slidingDriver(t, `s.SlidingWindows.ofTimeDifferenceWithNoGrace(10)`, stringAgg,
		[]slidingIn{{"A", "1", 100}, {"A", "2", 89}, {"A", "3", 90}})
	expectLines(t, slidingLines(slidingOutputs(d)), []string{
		"A@90/100 0+1 @100", "A@90/100 0+1+3 @100", "A@91/101 0+1 @100",
	})
}

// Emit on close: each window once, final, in start order, when start + d + grace < the
// watermark (here the stream time: the test driver has no backlog).
func TestSlidingEmitOnWindowClose(t *testing.T) {
	d := slidingDriver(t, `s.SlidingWindows.ofTimeDifferenceAndGrace(10, 5)`,
		`:emitStrategy(s.EmitStrategy.onWindowClose())`+stringAgg,
		[]slidingIn{{"A", "1", 10}, {"A", "2", 15}, {"A", "3", 20}, {"A", "4", 22}, {"A", "5", 30}})
	// At 30 the last closed start is 30 − 5 − 10 − 1 = 14.
	expectLines(t, slidingLines(slidingOutputs(d)), []string{"A@0/10 0+1 @10", "A@5/15 0+1+2 @15",
		"A@10/20 0+1+2+3 @20", "A@11/21 0+2+3 @20", "A@12/22 0+2+3+4 @22"})
	if err := d.Pipe("in", []byte("B"), []byte("x"), 100, nil); err != nil {
		t.Fatal(err)
	}
	expectLines(t, slidingLines(slidingOutputs(d)), []string{"A@16/26 0+3+4 @22",
		"A@20/30 0+3+4+5 @30", "A@21/31 0+4+5 @30", "A@23/33 0+5 @30"})
}

func TestSlidingWindowsErrors(t *testing.T) {
	for _, c := range []struct{ script, want string }{
		{`s.SlidingWindows.ofTimeDifferenceWithNoGrace(-1)`, "time difference must not be negative"},
		{`s.SlidingWindows.ofTimeDifferenceAndGrace(10, -1)`, "grace period must not be negative"},
		{`b:stream("in"):groupByKey():windowedBy(s.SlidingWindows.ofTimeDifferenceWithNoGrace(10)):emitStrategy(1)`, "emitStrategy needs"},
		{`b:stream("in"):groupByKey():windowedBy(1)`, "windowedBy needs"},
	} {
		_, _, err := load(t, prelude+c.script+"\nreturn b", nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.script, err, c.want)
		}
	}
}
