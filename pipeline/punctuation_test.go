package pipeline

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// The vectors below follow Kafka Streams' rule (PunctuationSchedule#next, PunctuationQueue,
// StreamTask#schedule; docs/time.md, Punctuation): a stream-time schedule's grid starts at
// 0, a wall-clock one's at the time of scheduling plus the interval; a due schedule fires
// once with the current time, and its next time is the first point of its grid after it.

// punctuationProcessor runs init when its task starts and process on each record.
type punctuationProcessor struct {
	ctx     *ProcessorContext
	init    func(ctx *ProcessorContext) error
	process func(ctx *ProcessorContext, rec Record) error
}

func (p *punctuationProcessor) Init(ctx *ProcessorContext) error {
	p.ctx = ctx
	if p.init == nil {
		return nil
	}
	return p.init(ctx)
}

func (p *punctuationProcessor) Process(rec Record) error {
	if p.process == nil {
		return nil
	}
	return p.process(p.ctx, rec)
}

func (p *punctuationProcessor) Close() error { return nil }

// punctuationDriver runs one processor over topic "in" with the wall clock at 10,000.
func punctuationDriver(t *testing.T, p *punctuationProcessor) *Driver {
	t.Helper()
	b := newTestBuilder()
	s, err := b.Stream([]string{"in"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Process(func() (UserProcessor, error) { return p, nil }, nil, ""); err != nil {
		t.Fatal(err)
	}
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores(), WallClockMs: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// fired records each punctuation as name@time.
type fired []string

func (f *fired) punctuator(name string) Punctuator {
	return func(ts int64) error {
		*f = append(*f, fmt.Sprintf("%s@%d", name, ts))
		return nil
	}
}

func pipeAt(t *testing.T, d *Driver, timestamps ...int64) {
	t.Helper()
	for _, ts := range timestamps {
		if err := d.Pipe("in", []byte("k"), []byte("v"), ts, nil); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStreamTimePunctuationKeepsItsGrid(t *testing.T) {
	var got fired
	d := punctuationDriver(t, &punctuationProcessor{init: func(ctx *ProcessorContext) error {
		_, err := ctx.Schedule(10, StreamTime, got.punctuator("p"))
		return err
	}})
	// The grid is 0, 10, 20, …: the first record fires (0 ≤ 25), and the next time is 30,
	// not 25 + 10. A jump from 31 to 75 misses 40 to 70: one punctuation at 75, then 80.
	pipeAt(t, d, 25, 29, 30, 31, 75, 79, 80, 95, 100, 100, 109)
	want := fired{"p@25", "p@30", "p@75", "p@80", "p@95", "p@100"}
	if !slices.Equal(got, want) {
		t.Fatalf("punctuations %v, want %v", got, want)
	}
}

// A schedule made while the stream runs is on the same grid from 0: it fires right after the
// record that made it, then at the next multiple of its interval.
func TestStreamTimePunctuationScheduledMidStream(t *testing.T) {
	var got fired
	d := punctuationDriver(t, &punctuationProcessor{process: func(ctx *ProcessorContext, rec Record) error {
		if rec.Timestamp == 37 {
			_, err := ctx.Schedule(10, StreamTime, got.punctuator("p"))
			return err
		}
		return nil
	}})
	pipeAt(t, d, 5, 12, 37, 39, 40, 41, 58, 60)
	want := fired{"p@37", "p@40", "p@58", "p@60"}
	if !slices.Equal(got, want) {
		t.Fatalf("punctuations %v, want %v", got, want)
	}
}

// Punctuators due at once fire earliest due first (ties in the order scheduled); one
// cancelled by another before its turn does not fire, and one that cancels itself fires no
// more.
func TestPunctuationOrderAndCancel(t *testing.T) {
	var got fired
	var a, b *Cancellable
	d := punctuationDriver(t, &punctuationProcessor{init: func(ctx *ProcessorContext) error {
		var err error
		if a, err = ctx.Schedule(10, StreamTime, got.punctuator("a")); err != nil {
			return err
		}
		b, err = ctx.Schedule(4, StreamTime, func(ts int64) error {
			got = append(got, fmt.Sprintf("b@%d", ts))
			switch ts {
			case 12:
				a.Cancel()
			case 20:
				b.Cancel()
			}
			return nil
		})
		return err
	}})
	// At 0 both are due at 0: a, then b. At 12 a is due at 10, b at 4: b first, and it
	// cancels a. b fires at 20 (due at 16) and cancels itself.
	pipeAt(t, d, 0, 12, 20, 30, 40)
	want := fired{"a@0", "b@0", "b@12", "b@20"}
	if !slices.Equal(got, want) {
		t.Fatalf("punctuations %v, want %v", got, want)
	}
	for _, k := range d.Topology().order {
		if n := len(k.punctuators); n != 0 {
			t.Fatalf("task %s: %d cancelled punctuators kept", k.id, n)
		}
	}
}

// Stream-time punctuators of one task fire on that task's stream time only.
func TestStreamTimePunctuationIsPerTask(t *testing.T) {
	var got fired
	b := newTestBuilder()
	s, err := b.Stream([]string{"in"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	supplier := func() (UserProcessor, error) {
		return &punctuationProcessor{init: func(ctx *ProcessorContext) error {
			_, err := ctx.Schedule(10, StreamTime, got.punctuator(fmt.Sprint("p", ctx.Partition())))
			return err
		}}, nil
	}
	if _, err := s.Process(supplier, nil, ""); err != nil {
		t.Fatal(err)
	}
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores(), Partitions: map[string]int32{"in": 2}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		p  int32
		ts int64
	}{{0, 3}, {1, 15}, {0, 9}, {0, 10}, {1, 19}, {1, 21}} {
		if err := d.PipeTo("in", r.p, []byte("k"), []byte("v"), r.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	want := fired{"p0@3", "p1@15", "p0@10", "p1@21"}
	if !slices.Equal(got, want) {
		t.Fatalf("punctuations %v, want %v", got, want)
	}
}

func TestWallClockPunctuationKeepsItsGrid(t *testing.T) {
	var got fired
	d := punctuationDriver(t, &punctuationProcessor{process: func(ctx *ProcessorContext, rec Record) error {
		// Scheduled at 10,037 (the record after the clock moved 37 ms): the grid is 10,137,
		// 10,237, …
		_, err := ctx.Schedule(100, WallClockTime, got.punctuator("w"))
		return err
	}})
	if err := d.AdvanceWallClock(37); err != nil {
		t.Fatal(err)
	}
	pipeAt(t, d, 1)
	// 10,136: not yet; 10,137 fires; a jump to 10,480 misses 10,237 to 10,437: one
	// punctuation, then 10,537 (not 10,580); 10,537 and 10,637 on the grid.
	for _, ms := range []int64{99, 1, 343, 56, 1, 100, 99} {
		if err := d.AdvanceWallClock(ms); err != nil {
			t.Fatal(err)
		}
	}
	want := fired{"w@10137", "w@10480", "w@10537", "w@10637"}
	if !slices.Equal(got, want) {
		t.Fatalf("punctuations %v, want %v", got, want)
	}
}

// An interval as long as int64 allows fires once (stream time) or never (wall clock), and
// never wraps round to fire on every record or tick.
func TestPunctuationOfTheLongestInterval(t *testing.T) {
	var got fired
	d := punctuationDriver(t, &punctuationProcessor{init: func(ctx *ProcessorContext) error {
		if _, err := ctx.Schedule(math.MaxInt64, StreamTime, got.punctuator("s")); err != nil {
			return err
		}
		_, err := ctx.Schedule(math.MaxInt64, WallClockTime, got.punctuator("w"))
		return err
	}})
	pipeAt(t, d, 5, math.MaxInt64/2)
	if err := d.AdvanceWallClock(math.MaxInt64 / 2); err != nil {
		t.Fatal(err)
	}
	if want := (fired{"s@5"}); !slices.Equal(got, want) {
		t.Fatalf("punctuations %v, want %v", got, want)
	}
}

// A task starts, and its processors' init runs, when the driver is made (as
// TopologyTestDriver's does), not on its first record: a wall-clock schedule made in init is
// on the grid of the initial wall clock, 10,000, and fires before any record comes.
func TestWallClockPunctuationStartsWithItsTask(t *testing.T) {
	var got fired
	d := punctuationDriver(t, &punctuationProcessor{init: func(ctx *ProcessorContext) error {
		_, err := ctx.Schedule(100, WallClockTime, got.punctuator("w"))
		return err
	}})
	if err := d.AdvanceWallClock(150); err != nil {
		t.Fatal(err)
	}
	pipeAt(t, d, 1)
	if err := d.AdvanceWallClock(50); err != nil {
		t.Fatal(err)
	}
	if want := (fired{"w@10150", "w@10200"}); !slices.Equal(got, want) {
		t.Fatalf("punctuations %v, want %v", got, want)
	}
}

// A worker's topology starts the tasks it is given (those reading the assigned partitions
// and those reading a repartition topic) at its next wall-clock check (or record), whether
// records come or not, task by task, so that their wall-clock schedules start on the grid
// of that time.
func TestAssignedTasksStartBeforeTheirFirstRecord(t *testing.T) {
	var inits []string
	var got fired
	proc := func(name string) ProcessorSupplier {
		return func() (UserProcessor, error) {
			return &punctuationProcessor{init: func(ctx *ProcessorContext) error {
				inits = append(inits, fmt.Sprintf("%s/%d", ctx.Name(), ctx.Partition()))
				_, err := ctx.Schedule(100, WallClockTime, got.punctuator(fmt.Sprintf("%s/%d", ctx.Name(), ctx.Partition())))
				return err
			}}, nil
		}
	}
	b := newTestBuilder()
	s, err := b.Stream([]string{"in"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Process(proc("direct"), nil, "direct"); err != nil {
		t.Fatal(err)
	}
	r, err := s.Repartition(Repartitioned{Name: "re", NumPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Process(proc("after"), nil, "after"); err != nil {
		t.Fatal(err)
	}
	clock := int64(1000)
	topo, err := b.Build(TopologyOptions{Collector: &Driver{}, Stores: NewMemoryStores(),
		SourcePartitions: map[string]int32{"in": 2}, Clock: func() int64 { return clock }, ExplicitTasks: true})
	if err != nil {
		t.Fatal(err)
	}
	ids := topo.TaskIDs()
	slices.Reverse(ids)
	for _, id := range ids {
		if err := topo.AddTask(id); err != nil {
			t.Fatal(err)
		}
	}
	if len(inits) != 0 || !topo.HasWallClockPunctuators() {
		t.Fatalf("inits %v before the next check, wall-clock punctuators %v; want none, and true to be called", inits, topo.HasWallClockPunctuators())
	}
	if err := topo.PunctuateWallClock(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"direct/0", "direct/1", "after/0", "after/1", "after/2"}; !slices.Equal(inits, want) {
		t.Fatalf("inits %v, want %v", inits, want)
	}
	clock = 1100
	if err := topo.PunctuateWallClock(); err != nil {
		t.Fatal(err)
	}
	if want := (fired{"direct/0@1100", "direct/1@1100", "after/0@1100", "after/1@1100", "after/2@1100"}); !slices.Equal(got, want) {
		t.Fatalf("punctuations %v, want %v", got, want)
	}
}

// A topology without user processors has nothing to start: its tasks do not make the agent
// check the wall clock (and open an epoch) for them.
func TestAssignmentWithoutProcessorsHasNothingToStart(t *testing.T) {
	b := newTestBuilder()
	s, err := b.Stream([]string{"in"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	topo, err := b.Build(TopologyOptions{Collector: &Driver{}, SourcePartitions: map[string]int32{"in": 1}, ExplicitTasks: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.AddTask(TaskID{}); err != nil {
		t.Fatal(err)
	}
	if topo.HasWallClockPunctuators() {
		t.Fatal("wall-clock punctuators reported for a topology without processors")
	}
}
