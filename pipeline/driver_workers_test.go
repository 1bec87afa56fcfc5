package pipeline

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// wordCounter builds in → flatMapValues (words) → groupBy (word) → count → out, and a global
// table "names" joined with the counts by word: records cross from the first sub-topology's
// tasks to the counting ones, and the join reads the global store. failOn makes the
// counting sub-topology fail on that word.
func wordCounter(t *testing.T, failOn string) *StreamsBuilder {
	t.Helper()
	b := newTestBuilder()
	names, err := b.GlobalTable("names", Consumed{}, Materialized{StoreName: "names"})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := b.Stream([]string{"in"}, Consumed{})
	words, _ := s.FlatMapValues(func(r Record) ([]any, error) {
		var out []any
		for _, w := range strings.Fields(r.Value.(string)) {
			out = append(out, w)
		}
		return out, nil
	}, "")
	g, _ := words.GroupBy(func(r Record) (any, error) { return r.Value, nil }, Grouped{})
	counts, err := g.Count(Materialized{StoreName: "counts"}, countSerde{}, "")
	if err != nil {
		t.Fatal(err)
	}
	cs, _ := counts.ToStream("")
	checked, _ := cs.MapValues(func(r Record) (any, error) {
		if r.Key == failOn {
			return nil, errors.New("boom on " + failOn)
		}
		return fmt.Sprint(r.Value), nil
	}, "")
	named, err := checked.LeftJoinGlobal(names, func(r Record) (any, error) { return r.Key, nil },
		func(r Record, _, name any) (any, error) { return fmt.Sprint(r.Value, "/", name), nil }, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := named.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	return b
}

// pipeWords pipes a global row and lines of words over three partitions, and returns what
// the driver wrote to "out", by key in order, and the first error.
func pipeWords(d *Driver, lines []string) (map[string][]string, error) {
	if err := d.Pipe("names", []byte("b"), []byte("bee"), 1, nil); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	var err error
	for i, line := range lines {
		if err = d.PipeTo("in", int32(i%3), nil, []byte(line), int64(10+i), nil); err != nil {
			break
		}
	}
	for r, ok := d.ReadOutput("out"); ok; r, ok = d.ReadOutput("out") {
		out[string(r.Key)] = append(out[string(r.Key)], string(r.Value))
	}
	return out, err
}

var driverLines = []string{"a b c", "b c d", "c d e", "a a b", "e f g h", "b"}

// A driver with workers runs the tasks on two goroutines, records crossing between them,
// and gives each key the outputs a driver without workers gives, in the same order: the
// counts, joined with the global table the first worker keeps.
func TestWorkersDriverMatchesOneWorker(t *testing.T) {
	opts := DriverOptions{Partitions: map[string]int32{"in": 3}}
	opts.Stores = NewMemoryStores()
	one, err := NewDriver(wordCounter(t, ""), opts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := pipeWords(one, driverLines)
	if err != nil {
		t.Fatal(err)
	}
	opts.Stores = NewMemoryStores()
	two, err := NewWorkersDriver([]*StreamsBuilder{wordCounter(t, ""), wordCounter(t, "")}, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer two.Close()
	got, err := pipeWords(two, driverLines)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("outputs with two workers %v, want %v", got, want)
	}
	if want["b"][len(want["b"])-1] != "4/bee" {
		t.Fatalf("outputs %v: b's last is not 4/bee", want)
	}
	var crossed int64
	for _, l := range two.workers.ex.lanes {
		crossed += l.sent.Load()
	}
	if crossed == 0 {
		t.Fatal("no record crossed between the workers")
	}
	for _, w := range two.workers.all {
		if len(w.topo.Tasks()) == 0 {
			t.Fatalf("a worker runs no task: %v, %v", two.workers.all[0].topo.Tasks(), two.workers.all[1].topo.Tasks())
		}
	}
	store, err := two.Store("counts", DefaultPartition([]byte("b"), 3))
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _, err := store.Get("b"); err != nil || v != int64(4) {
		t.Fatalf("count of b = %v, %v; want 4", v, err)
	}
}

// A record that fails in a task of another worker than the one it was piped to fails the
// Pipe, named by the piped record; a processing exception handler that continues skips it
// and writes its dead letter, as for a record that fails where it was piped.
func TestWorkersDriverFailsOnAnotherWorkersRecord(t *testing.T) {
	builders := func() []*StreamsBuilder {
		return []*StreamsBuilder{wordCounter(t, "e"), wordCounter(t, "e")}
	}
	d, err := NewWorkersDriver(builders(), DriverOptions{Partitions: map[string]int32{"in": 3}, Stores: NewMemoryStores()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// The first line with e, "c d e", is piped to partition 2; e is counted on the other
	// worker.
	if piped, counted := d.workers.owners[TaskID{1, 2}], d.workers.owners[TaskID{2, DefaultPartition([]byte("e"), 3)}]; piped == counted {
		t.Fatalf("e is counted on worker %d, where its line is piped", piped)
	}
	_, err = pipeWords(d, driverLines)
	var re *RecordError
	if !errors.As(err, &re) || re.Topic != "in" || re.Partition != 2 || re.Offset != 0 || !strings.Contains(err.Error(), "boom on e") {
		t.Fatalf("piping a line with e: %v, want the error of in-2@0", err)
	}

	d, err = NewWorkersDriver(builders(), DriverOptions{Partitions: map[string]int32{"in": 3}, Stores: NewMemoryStores(),
		ExceptionHandlers: ExceptionHandlers{ContinueOnProcessingError: true, DeadLetterQueueTopic: "dlq"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out, err := pipeWords(d, driverLines)
	if err != nil {
		t.Fatal(err)
	}
	if len(out["e"]) != 0 || len(out["d"]) != 2 {
		t.Fatalf("outputs %v: want none of e, two of d", out)
	}
	var letters []string
	for r, ok := d.ReadOutput("dlq"); ok; r, ok = d.ReadOutput("dlq") {
		letters = append(letters, string(r.Value))
	}
	if want := []string{"c d e", "e f g h"}; !slices.Equal(letters, want) {
		t.Fatalf("dead letters %q, want %q", letters, want)
	}
}
