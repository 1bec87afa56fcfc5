package pipeline

import (
	"strconv"
	"testing"
)

// sumObserver adds up observations, standing in for a histogram.
type sumObserver struct{ sum float64 }

func (o *sumObserver) Observe(v float64) { o.sum += v }

// sumSensors observes store latencies into one sumObserver.
type sumSensors struct{ o *sumObserver }

func (s sumSensors) Processed(string) Counter             { return nopCounter{} }
func (s sumSensors) Dropped(string, DropReason) Counter   { return nopCounter{} }
func (s sumSensors) EndToEnd(string) Observer             { return s.o }
func (s sumSensors) Punctuation(string) Observer          { return s.o }
func (s sumSensors) StoreLatency(string, string) Observer { return s.o }
func (s sumSensors) TaskProcessed(string) Counter         { return nopCounter{} }

// BenchmarkKeyValueStorePutGet is the per-record store path of a count: one Get and one
// Put through the typed store over in-memory bytes, so the engine's own overhead (serdes,
// sampled latency) is what it measures.
// benchDriver is a test driver over in-memory stores with the store spec added.
func benchDriver(b *testing.B, spec StoreSpec) *Driver {
	b.Helper()
	sb := newTestBuilder()
	if err := sb.AddStateStore(spec); err != nil {
		b.Fatal(err)
	}
	if _, err := sb.Stream([]string{"in"}, Consumed{}); err != nil {
		b.Fatal(err)
	}
	d, err := NewDriver(sb, DriverOptions{Stores: NewMemoryStores(), Sensors: sumSensors{&sumObserver{}}})
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func BenchmarkKeyValueStorePutGet(b *testing.B) {
	s, err := benchDriver(b, StoreSpec{Name: "counts", Type: KeyValueStoreType}).Store("counts", 0)
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "word-" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := keys[i%len(keys)]
		if _, _, _, err := s.Get(k); err != nil {
			b.Fatal(err)
		}
		if err := s.Put(k, k, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStoreOpSampler is the latency sampling that every store operation pays.
func BenchmarkStoreOpSampler(b *testing.B) {
	s := opSampler{obs: &sumObserver{}}
	for range b.N {
		s.stop(s.start())
	}
}

// BenchmarkWindowStoreFetch is the per-record read of a windowed aggregation: a
// single-window Fetch through the typed store over in-memory bytes, half of them absent.
func BenchmarkWindowStoreFetch(b *testing.B) {
	spec := StoreSpec{Name: "counts", Type: TimestampedWindowStoreType, WindowSize: 100, Retention: 1000}
	s, err := benchDriver(b, spec).WindowStore("counts", 0)
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = "word-" + strconv.Itoa(i)
		for start := int64(0); start < 500; start += 100 {
			if _, err := s.Put(keys[i], keys[i], start, start); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, _, err := s.Fetch(keys[i%len(keys)], int64(i%10)*50); err != nil {
			b.Fatal(err)
		}
	}
}
