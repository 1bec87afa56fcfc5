package pipeline

import (
	"strings"
	"testing"
)

// bytesSerde keeps values as strings, enough for engine tests without package serdes.
type bytesSerde struct{}

func (bytesSerde) Name() string { return "test" }
func (bytesSerde) Serialize(_ string, _ Headers, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	return []byte(v.(string)), nil
}
func (bytesSerde) Deserialize(_ string, _ Headers, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	return string(b), nil
}

func newTestBuilder() *StreamsBuilder {
	return NewStreamsBuilder(Serdes{Key: bytesSerde{}, Value: bytesSerde{}})
}

func names(b *StreamsBuilder) string {
	var out []string
	for _, n := range b.Nodes() {
		out = append(out, n.Name)
	}
	return strings.Join(out, " ")
}

func TestGeneratedNamesFollowOneCounter(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	f, _ := s.Filter(func(Record) (bool, error) { return true, nil }, "")
	m, _ := f.MapValues(func(r Record) (any, error) { return r.Value, nil }, "upper")
	split, _ := m.Split("")
	a, _, _ := split.Branch(func(Record) (bool, error) { return true, nil }, "")
	_, _, _ = split.Branch(func(Record) (bool, error) { return true, nil }, "-named")
	_, _, _ = split.DefaultBranch("")
	_ = a.To("out", Produced{})
	want := "KSTREAM-SOURCE-0000000000 KSTREAM-FILTER-0000000001 upper KSTREAM-BRANCH-0000000003 " +
		"KSTREAM-BRANCH-00000000031 KSTREAM-BRANCH-0000000003-named KSTREAM-BRANCH-00000000030 KSTREAM-SINK-0000000007"
	if got := names(b); got != want {
		t.Fatalf("names\n got %s\nwant %s", got, want)
	}
}

func TestDuplicateNamesAndSourcesAreRefused(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	if _, err := s.Peek(func(Record) error { return nil }, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Peek(func(Record) error { return nil }, "x"); err == nil || !strings.Contains(err.Error(), `"x" is already used`) {
		t.Fatalf("err = %v", err)
	}
	if _, err := b.Stream([]string{"in"}, Consumed{}); err == nil {
		t.Fatal("a second source on the same topic must be refused")
	}
}

func TestProcessErrorsNameNodeAndRecord(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	m, _ := s.MapValues(func(Record) (any, error) { return nil, errBoom }, "")
	_ = m.To("out", Produced{})
	d, err := NewDriver(b, DriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = d.Pipe("in", nil, []byte("ok"), 1, nil)
	err = d.Pipe("in", nil, []byte("v"), 1, nil)
	if err == nil || err.Error() != "in-0@1: processor KSTREAM-MAPVALUES-0000000001: boom" {
		t.Fatalf("err = %v", err)
	}
}

type boomError struct{}

func (boomError) Error() string { return "boom" }

var errBoom = boomError{}

func TestNegativeTimestampFailsWithDefaultExtractor(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	_ = s.To("out", Produced{})
	d, _ := NewDriver(b, DriverOptions{})
	if err := d.Pipe("in", nil, []byte("v"), -1, nil); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("err = %v", err)
	}
}

// countingSensors counts drops by reason and keeps every observation, keyed
// "e2e/<node>", "punctuation/<node>" or "store/<store>/<op>".
type countingSensors struct {
	dropped  map[string]int
	observed map[string][]float64
}

func newCountingSensors() *countingSensors {
	return &countingSensors{dropped: map[string]int{}, observed: map[string][]float64{}}
}

type fnCounter func()

func (f fnCounter) Inc() { f() }

type fnObserver func(float64)

func (f fnObserver) Observe(v float64) { f(v) }

func (c *countingSensors) observer(key string) Observer {
	return fnObserver(func(v float64) { c.observed[key] = append(c.observed[key], v) })
}

func (c *countingSensors) Processed(string) Counter     { return fnCounter(func() {}) }
func (c *countingSensors) TaskProcessed(string) Counter { return fnCounter(func() {}) }
func (c *countingSensors) EndToEnd(node string) Observer {
	return c.observer("e2e/" + node)
}
func (c *countingSensors) Punctuation(node string) Observer {
	return c.observer("punctuation/" + node)
}
func (c *countingSensors) StoreLatency(store, op string) Observer {
	return c.observer("store/" + store + "/" + op)
}
func (c *countingSensors) Dropped(node string, reason DropReason) Counter {
	return fnCounter(func() { c.dropped[reason.String()]++; c.dropped[node+"/"+reason.String()]++ })
}

func TestNegativeExtractedTimestampIsDroppedAndCounted(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{TimestampExtractor: func(Record) (int64, error) { return -5, nil }})
	_ = s.To("out", Produced{})
	sens := newCountingSensors()
	d, _ := NewDriver(b, DriverOptions{Sensors: sens})
	if err := d.Pipe("in", nil, []byte("v"), 1, nil); err != nil {
		t.Fatal(err)
	}
	source := b.Nodes()[0].Name
	if d.Pending("out") != 0 || sens.dropped["negative-timestamp"] != 1 || sens.dropped[source+"/negative-timestamp"] != 1 {
		t.Fatalf("pending %d, dropped %v", d.Pending("out"), sens.dropped)
	}
}

func TestSinkUsesMurmur2ForKeyedRecords(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	_ = s.To("out", Produced{})
	d, _ := NewDriver(b, DriverOptions{Partitions: map[string]int32{"out": 3}})
	// Kafka's partitions for String keys over 3 partitions (comments of Kafka's KTableKTableForeignKeyInnerJoinMultiIntegrationTest).
	want := map[string]int32{"0": 2, "1": 0, "4": 1}
	for k := range want {
		_ = d.Pipe("in", []byte(k), []byte("v"), 1, nil)
	}
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			break
		}
		if r.Partition != want[string(r.Key)] {
			t.Fatalf("key %s → partition %d, want %d", r.Key, r.Partition, want[string(r.Key)])
		}
	}
}
