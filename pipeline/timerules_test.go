package pipeline

import (
	"fmt"
	"math"
	"reflect"
	"testing"
)

// The time rules of Kafka Streams' windowed operators, at their boundaries, with Go records:
// when a window stops taking records on the operator's stream time (a late drop), when the
// watermark closes it and its final result goes out, and the drop of a record the
// operator's stream time still accepts for a window the watermark has closed. The input
// topic has two partitions; the test driver holds every partition idle, so the watermark is
// the largest stream time of any partition while each partition (task) keeps the operator's
// own stream time. Partition 1 is the one that lags.

// ruleRun is one topology under test and what reached its end.
type ruleRun struct {
	t       *testing.T
	d       *Driver
	sensors *countingSensors
	out     []string
}

// newRuleRun builds in (two partitions) → build → a terminal that keeps "key=value@ts" for
// each record (windowed keys as Kafka prints them, [k@start/end]; null for no value).
func newRuleRun(t *testing.T, build func(t *testing.T, s *KStream) *KStream) *ruleRun {
	t.Helper()
	b := newTestBuilder()
	s, err := b.Stream([]string{"in"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	run := &ruleRun{t: t, sensors: newCountingSensors()}
	err = build(t, s).Foreach(func(r Record) error {
		v := "null"
		if r.Value != nil {
			v = fmt.Sprint(r.Value)
		}
		run.out = append(run.out, fmt.Sprintf("%v=%s@%d", r.Key, v, r.Timestamp))
		return nil
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	run.d, err = NewDriver(b, DriverOptions{Stores: NewMemoryStores(), Sensors: run.sensors, Partitions: map[string]int32{"in": 2}})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// send processes one record and checks what reached the end and the drops it caused (the
// reasons not named: none).
func (r *ruleRun) send(partition int32, key string, ts int64, drops map[DropReason]int, want ...string) {
	r.t.Helper()
	r.out = nil
	before := map[string]int{}
	for k, v := range r.sensors.dropped {
		before[k] = v
	}
	in := SourceRecord{Topic: "in", Partition: partition, Timestamp: ts, Key: []byte(key), Value: []byte("v")}
	if err := r.d.topo.Process(&in); err != nil {
		r.t.Fatal(err)
	}
	if !reflect.DeepEqual(r.out, want) {
		r.t.Fatalf("p%d %s@%d: got %q, want %q", partition, key, ts, r.out, want)
	}
	for _, reason := range DropReasons() {
		if got := r.sensors.dropped[reason.String()] - before[reason.String()]; got != drops[reason] {
			r.t.Fatalf("p%d %s@%d: %d %s drops, want %d", partition, key, ts, got, reason, drops[reason])
		}
	}
}

func groupedByKey(t *testing.T, s *KStream) *KGroupedStream {
	t.Helper()
	g, err := s.GroupByKey(Grouped{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// windowedCount groups by key, windows with window and counts per window, caching off,
// emitting on window close if asked; suppress, if given, follows the count.
func windowedCount(window func(*KGroupedStream) (countable, error), onClose bool, suppress *Suppressed) func(*testing.T, *KStream) *KStream {
	return func(t *testing.T, s *KStream) *KStream {
		t.Helper()
		w, err := window(groupedByKey(t, s))
		if err != nil {
			t.Fatal(err)
		}
		w.EmitOnWindowClose(onClose)
		table, err := w.Count(Materialized{CachingDisabled: true}, int64Serde{}, "")
		if err != nil {
			t.Fatal(err)
		}
		if suppress != nil {
			if table, err = table.Suppress(*suppress); err != nil {
				t.Fatal(err)
			}
		}
		out, err := table.ToStream("")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// countable is what the three windowed streams share.
type countable interface {
	Count(Materialized, Serde, string) (*KTable, error)
	EmitOnWindowClose(bool)
}

func timeWindowCount(w TimeWindows, onClose bool, suppress *Suppressed) func(*testing.T, *KStream) *KStream {
	return windowedCount(func(g *KGroupedStream) (countable, error) { return g.WindowedBy(w) }, onClose, suppress)
}

func sessionCount(w SessionWindows, onClose bool, suppress *Suppressed) func(*testing.T, *KStream) *KStream {
	return windowedCount(func(g *KGroupedStream) (countable, error) { return g.WindowedBySession(w) }, onClose, suppress)
}

func slidingWindowCount(w SlidingWindows, onClose bool, suppress *Suppressed) func(*testing.T, *KStream) *KStream {
	return windowedCount(func(g *KGroupedStream) (countable, error) { return g.WindowedBySliding(w) }, onClose, suppress)
}

var noDrops = map[DropReason]int{}

// KStreamWindowAggregate: closeTime = stream time − grace, and a window [s, e) takes a record
// while e > closeTime, so it is closed once end + grace ≤ stream time; a record is dropped
// once per closed window it falls in.
func TestTimeWindowTakesRecordsUntilEndPlusGrace(t *testing.T) {
	r := newRuleRun(t, timeWindowCount(TimeWindows{Size: 10, Advance: 10, Grace: 5}, false, nil))
	r.send(0, "k", 14, noDrops, "[k@10/20]=1@14")
	r.send(0, "k", 4, noDrops, "[k@0/10]=1@4") // 10 + 5 > 14
	r.send(0, "x", 15, noDrops, "[x@10/20]=1@15")
	r.send(0, "k", 5, map[DropReason]int{DropLate: 1}) // 10 + 5 ≤ 15
	// Each partition is its own task with its own stream time.
	r.send(1, "k", 5, noDrops, "[k@0/10]=1@5")

	hopping := newRuleRun(t, timeWindowCount(TimeWindows{Size: 10, Advance: 5}, false, nil))
	hopping.send(0, "k", 12, noDrops, "[k@5/15]=1@12", "[k@10/20]=1@12")
	hopping.send(0, "k", 7, map[DropReason]int{DropLate: 1}, "[k@5/15]=2@12") // [0,10) closed, [5,15) open
	hopping.send(0, "k", 20, noDrops, "[k@15/25]=1@20", "[k@20/30]=1@20")
	hopping.send(0, "k", 7, map[DropReason]int{DropLate: 2}) // both of its windows closed
}

// A record at the largest timestamp falls in the windows that start up to it, the last of
// them ending at math.MaxInt64 (TimeWindow's end saturates); finding them must not step past
// the timestamp and wrap around.
func TestTimeWindowsAtTheLargestTimestamp(t *testing.T) {
	const top = math.MaxInt64
	r := newRuleRun(t, timeWindowCount(TimeWindows{Size: 10, Advance: 5}, false, nil))
	first := (top - 5) / 5 * 5
	r.send(0, "k", top, noDrops, fmt.Sprintf("[k@%d/%d]=1@%d", first, top, top), fmt.Sprintf("[k@%d/%d]=1@%d", first+5, top, top))
}

// Emit on window close (KStreamWindowAggregate's emit check): a window's final result goes
// out once end + grace ≤ the watermark, exactly once; an update the lagging partition's
// stream time still accepts for it is then dropped as window-closed.
func TestTimeWindowFinalResultAtEndPlusGraceOnTheWatermark(t *testing.T) {
	r := newRuleRun(t, timeWindowCount(TimeWindows{Size: 10, Advance: 10, Grace: 5}, true, nil))
	r.send(0, "k", 0, noDrops)
	r.send(0, "x", 14, noDrops)
	r.send(0, "x", 15, noDrops, "[k@0/10]=1@0")
	r.send(1, "k", 3, map[DropReason]int{DropWindowClosed: 1})
	r.send(1, "j", 10, noDrops)
	r.send(0, "x", 25, noDrops, "[x@10/20]=2@15", "[j@10/20]=1@10")
}

// untilWindowCloses (KTableSuppressProcessorSupplier with FinalResultsSuppressionBuilder):
// a window's buffer time is its end and it is released once end ≤ time − grace; the grace
// is the windows' own for time windows (GraphGraceSearchUtil), on the watermark here.
func TestSuppressReleasesTimeWindowAtEndPlusGrace(t *testing.T) {
	r := newRuleRun(t, timeWindowCount(TimeWindows{Size: 10, Advance: 10, Grace: 5}, false, &Suppressed{UntilWindowCloses: true}))
	r.send(0, "k", 0, noDrops)
	r.send(0, "x", 14, noDrops)
	r.send(0, "x", 15, noDrops, "[k@0/10]=1@0")
	r.send(1, "k", 3, map[DropReason]int{DropWindowClosed: 1})
}

// KStreamSessionWindowAggregate: sessions at most gap apart merge (inclusive); closeTime =
// stream time − grace − gap (the gap since KAFKA-12718) and a merged session whose end <
// closeTime is dropped, so a session is closed once end + gap + grace < stream time.
func TestSessionGapAndLateness(t *testing.T) {
	r := newRuleRun(t, sessionCount(SessionWindows{Gap: 10, Grace: 5}, false, nil))
	r.send(0, "k", 0, noDrops, "[k@0/0]=1@0")
	r.send(0, "k", 10, noDrops, "[k@0/0]=null@0", "[k@0/10]=2@10") // exactly gap apart: merged
	r.send(0, "k", 21, noDrops, "[k@21/21]=1@21")                  // gap + 1 apart: a new session
	r.send(0, "x", 6, noDrops, "[x@6/6]=1@6")                      // 6 + 10 + 5 = 21, not < 21
	r.send(0, "y", 5, map[DropReason]int{DropLate: 1})             // 5 + 10 + 5 < 21
	// A record older than that still joins a session it extends beyond closeTime.
	r.send(0, "k", 0, noDrops, "[k@0/10]=null@10", "[k@0/10]=3@10")
}

// Emit on window close for sessions: a session's final result goes out once end + gap +
// grace < the watermark.
func TestSessionFinalResultAfterEndPlusGapPlusGrace(t *testing.T) {
	r := newRuleRun(t, sessionCount(SessionWindows{Gap: 10, Grace: 5}, true, nil))
	r.send(0, "k", 0, noDrops)
	r.send(0, "x", 15, noDrops)
	r.send(0, "x", 16, noDrops, "[k@0/0]=1@0")
	r.send(1, "k", 1, noDrops)                                 // 1 + 15 = 16: still open
	r.send(1, "m", 0, map[DropReason]int{DropWindowClosed: 1}) // 0 + 15 < 16
	r.send(1, "j", 2, noDrops)
	r.send(0, "x", 40, noDrops, "[x@15/16]=2@16", "[k@1/1]=1@1", "[j@2/2]=1@2") // by task, then end
}

// Suppress after sessions waits for grace + gap (GraphGraceSearchUtil) past the session end:
// end ≤ time − grace − gap, 1 ms before emit on close would release it.
func TestSuppressReleasesSessionAtEndPlusGapPlusGrace(t *testing.T) {
	r := newRuleRun(t, sessionCount(SessionWindows{Gap: 10, Grace: 5}, false, &Suppressed{UntilWindowCloses: true}))
	r.send(0, "k", 0, noDrops)
	r.send(0, "x", 14, noDrops)
	r.send(0, "x", 15, noDrops, "[k@0/0]=1@0")
}

// KStreamSlidingWindowAggregate: windows [s, s + d] hold both ends; closeTime = stream time
// − grace, a window takes the record while its end ≥ closeTime, so it is closed once end +
// grace < stream time; a record none of whose windows can be open (ts + d < closeTime) is
// dropped before anything else.
func TestSlidingWindowsHoldBothEndsAndTakeRecordsUntilEndPlusGrace(t *testing.T) {
	r := newRuleRun(t, slidingWindowCount(SlidingWindows{TimeDifference: 10, Grace: 5}, false, nil))
	r.send(0, "k", 20, noDrops, "[k@10/20]=1@20")
	// 30 − 10 = 20: the record at 20 is in the new record's left window [20, 30].
	r.send(0, "k", 30, noDrops, "[k@21/31]=1@30", "[k@20/30]=2@30")
	r.send(0, "w", 100, noDrops, "[w@90/100]=1@100")
	r.send(0, "y", 95, noDrops, "[y@85/95]=1@95")       // 95 + 5 = 100, not < 100
	r.send(0, "v", 94, map[DropReason]int{DropLate: 1}) // its left window [84, 94] is closed
	r.send(0, "w", 94, map[DropReason]int{DropLate: 1}, // [84, 94] closed, the others open
		"[w@90/100]=2@100", "[w@95/105]=1@100")
	r.send(0, "z", 84, map[DropReason]int{DropLate: 1}) // 84 + 10 < 100 − 5
	r.send(1, "z", 84, noDrops, "[z@74/84]=1@84")
}

// Emit on window close for sliding windows: Kafka's emit bound upper = closeTime − d − 1,
// so a window's final result goes out once end + grace < the watermark.
func TestSlidingFinalResultAfterEndPlusGrace(t *testing.T) {
	r := newRuleRun(t, slidingWindowCount(SlidingWindows{TimeDifference: 10, Grace: 5}, true, nil))
	r.send(0, "k", 20, noDrops)
	r.send(0, "x", 25, noDrops)
	r.send(0, "x", 26, noDrops, "[k@10/20]=1@20")
	r.send(1, "k", 15, map[DropReason]int{DropWindowClosed: 1}) // [5, 15] and 15 + 5 < 26
}

// untilTimeLimit (KTableSuppressProcessorSupplier): a key's buffer time is its first
// buffered update's timestamp, and it is released once that is ≤ the operator's stream time
// − the limit; its stream time is the suppress processor's own, per task.
func TestSuppressUntilTimeLimitOnTheOperatorsStreamTime(t *testing.T) {
	r := newRuleRun(t, func(t *testing.T, s *KStream) *KStream {
		table, err := groupedByKey(t, s).Count(Materialized{CachingDisabled: true}, int64Serde{}, "")
		if err != nil {
			t.Fatal(err)
		}
		if table, err = table.Suppress(Suppressed{TimeLimit: 10}); err != nil {
			t.Fatal(err)
		}
		out, err := table.ToStream("")
		if err != nil {
			t.Fatal(err)
		}
		return out
	})
	r.send(0, "k", 0, noDrops)
	r.send(0, "k", 5, noDrops)
	r.send(0, "x", 9, noDrops)
	r.send(1, "j", 30, noDrops) // another task's stream time releases nothing here
	r.send(0, "x", 10, noDrops, "k=2@5")
	r.send(0, "x", 19, noDrops, "x=3@19")
}

// KStreamKStreamJoin: a left record at ts joins right records in [ts − before, ts + after],
// both ends included; a left or outer join emits it alone once no partner can come any
// more, ts + after + grace < the join's time (strictly, as the outer-join buffer's scan
// keeps an entry while ts + after + grace ≥ time), and an outer join's right record waits
// before instead of after; the scan runs only once minTime + the triggering side's after +
// grace is behind the join's time (minTime 16 holds back X16 at 24 and 25: 16 + 10 + 5 ≥
// 25). A record whose window, without grace, is behind the join's time is emitted alone at
// once. Kafka Streams 4.4 gives these results.
func TestStreamJoinWindowAfterIsStrict(t *testing.T) {
	d, _, _ := streamJoinDriver(t, OuterStreamJoin, JoinWindows{Before: 3, After: 10, Grace: 5}, StreamJoined{})
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "k", "L0", 0}))
	expectJoin(t, pipeJoin(t, d, joinInput{"right", "k", "R10", 10}), "k:L0+R10@10") // at 0 + after
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "j", "J1", 1}))
	expectJoin(t, pipeJoin(t, d, joinInput{"right", "x", "X16", 16}))                // 1 + 15 = 16
	expectJoin(t, pipeJoin(t, d, joinInput{"right", "x", "X17", 17}), "j:J1+null@1") // 1 + 15 < 17
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "y", "Y24", 24}))
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "y", "Y25", 25}))
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "z", "Z9", 9}), "z:Z9+null@9")     // 9 + 10 < 25
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "z", "Z10", 10}), "z:Z10+null@10") // 10 + 10 < 25
}

// A grace period near the int64 range keeps windows open instead of wrapping their close
// time around to the past.
func TestHugeGraceKeepsWindowsOpen(t *testing.T) {
	r := newRuleRun(t, timeWindowCount(TimeWindows{Size: 10, Advance: 10, Grace: math.MaxInt64 - 5}, true, nil))
	r.send(0, "k", 0, noDrops)
	r.send(0, "k", 1_000_000, noDrops)
	r.send(1, "k", 1, noDrops)
}
