package pipeline

import (
	"strconv"
	"testing"
)

// The per-record path of the operators (a count, time, session and sliding windows,
// suppress, stream-stream join) through the test driver over in-memory stores. The memory
// stores scan their whole map on a range read, so each driver takes opBatch records and is
// then replaced, with the timer stopped: what is measured stays the operators' own work.
const opBatch = 256

// opBench pipes records with 16 keys and timestamps 7 ms apart through the topology that
// build makes; late sends every other record 1000 ms behind, so that it is dropped.
func opBench(b *testing.B, late bool, build func(b *testing.B, sb *StreamsBuilder)) {
	b.Helper()
	keys := make([][]byte, 16)
	for i := range keys {
		keys[i] = []byte("key-" + strconv.Itoa(i))
	}
	value := []byte("v")
	newDriver := func() *Driver {
		sb := newTestBuilder()
		build(b, sb)
		d, err := NewDriver(sb, DriverOptions{Stores: NewMemoryStores()})
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	var d *Driver
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		n := i % opBatch
		if n == 0 {
			b.StopTimer()
			d = newDriver()
			b.StartTimer()
		}
		topic, ts := "in", int64(1000+n*7)
		if late && n%2 == 1 {
			ts -= 1000
		}
		if _, ok := d.topo.sourceSubtopology("right"); n%2 == 1 && ok {
			topic = "right"
		}
		if err := d.Pipe(topic, keys[n%len(keys)], value, ts, nil); err != nil {
			b.Fatal(err)
		}
		d.outputs["out"] = d.outputs["out"][:0]
	}
}

func grouped(b *testing.B, sb *StreamsBuilder) *KGroupedStream {
	b.Helper()
	s, err := sb.Stream([]string{"in"}, Consumed{})
	if err != nil {
		b.Fatal(err)
	}
	g, err := s.GroupByKey(Grouped{})
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func countTo(b *testing.B, table *KTable, err error, suppress bool) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
	if suppress {
		if table, err = table.Suppress(Suppressed{UntilWindowCloses: true}); err != nil {
			b.Fatal(err)
		}
	}
	out, err := table.ToStream("")
	if err != nil {
		b.Fatal(err)
	}
	if err := out.To("out", Produced{Serdes: Serdes{Key: nopSerde{}, Value: nopSerde{}}}); err != nil {
		b.Fatal(err)
	}
}

// nopSerde writes nothing: the sink's serialisation is not what these benchmarks measure.
type nopSerde struct{}

func (nopSerde) Name() string                                     { return "nop" }
func (nopSerde) Serialize(string, Headers, any) ([]byte, error)   { return nil, nil }
func (nopSerde) Deserialize(string, Headers, []byte) (any, error) { return nil, nil }

func timeWindowed(onClose, suppress bool) func(b *testing.B, sb *StreamsBuilder) {
	return func(b *testing.B, sb *StreamsBuilder) {
		w, err := grouped(b, sb).WindowedBy(TimeWindows{Size: 100, Advance: 50, Grace: 20})
		if err != nil {
			b.Fatal(err)
		}
		w.EmitOnWindowClose(onClose)
		table, err := w.Count(Materialized{CachingDisabled: true}, int64Serde{}, "")
		countTo(b, table, err, suppress)
	}
}

func BenchmarkOperatorPerRecord(b *testing.B) {
	b.Run("count", func(b *testing.B) {
		opBench(b, false, func(b *testing.B, sb *StreamsBuilder) {
			table, err := grouped(b, sb).Count(Materialized{CachingDisabled: true}, int64Serde{}, "")
			countTo(b, table, err, false)
		})
	})
	b.Run("hopping", func(b *testing.B) { opBench(b, false, timeWindowed(false, false)) })
	b.Run("hopping-late", func(b *testing.B) { opBench(b, true, timeWindowed(false, false)) })
	b.Run("hopping-onclose", func(b *testing.B) { opBench(b, false, timeWindowed(true, false)) })
	b.Run("hopping-suppress", func(b *testing.B) { opBench(b, false, timeWindowed(false, true)) })
	b.Run("session", func(b *testing.B) {
		opBench(b, false, func(b *testing.B, sb *StreamsBuilder) {
			w, err := grouped(b, sb).WindowedBySession(SessionWindows{Gap: 100, Grace: 20})
			if err != nil {
				b.Fatal(err)
			}
			table, err := w.Count(Materialized{CachingDisabled: true}, int64Serde{}, "")
			countTo(b, table, err, false)
		})
	})
	b.Run("sliding", func(b *testing.B) {
		opBench(b, false, func(b *testing.B, sb *StreamsBuilder) {
			w, err := grouped(b, sb).WindowedBySliding(SlidingWindows{TimeDifference: 100, Grace: 20})
			if err != nil {
				b.Fatal(err)
			}
			table, err := w.Count(Materialized{CachingDisabled: true}, int64Serde{}, "")
			countTo(b, table, err, false)
		})
	})
	b.Run("leftjoin", func(b *testing.B) {
		opBench(b, false, func(b *testing.B, sb *StreamsBuilder) {
			l, err := sb.Stream([]string{"in"}, Consumed{})
			if err != nil {
				b.Fatal(err)
			}
			r, err := sb.Stream([]string{"right"}, Consumed{})
			if err != nil {
				b.Fatal(err)
			}
			joiner := func(_ Record, lv, rv any) (any, error) { return lv, nil }
			j, err := l.JoinStream(r, LeftStreamJoin, joiner, JoinWindows{Before: 10, After: 10, Grace: 5}, StreamJoined{})
			if err != nil {
				b.Fatal(err)
			}
			if err := j.To("out", Produced{Serdes: Serdes{Key: nopSerde{}, Value: nopSerde{}}}); err != nil {
				b.Fatal(err)
			}
		})
	})
}
