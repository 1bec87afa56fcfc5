package pipeline

import "time"

// Operations StoreLatency is observed for.
const (
	StoreOpPut   = "put"   // writes, deletes included
	StoreOpGet   = "get"   // point reads
	StoreOpRange = "range" // iterators, from opening to Close, as Kafka Streams' metered iterators
)

// StoreLatencySampleEvery is how many operations of each kind on each store partition go
// by per timed one. Timing every call would cost two clock reads (~50 ns) per store access,
// about a tenth of an in-memory get and put; Kafka Streams only times store operations at
// the DEBUG recording level for the same reason.
const StoreLatencySampleEvery = 64

// opSampler times one call in StoreLatencySampleEvery of one operation. A store partition
// is used by its task's goroutine only, so the count needs no synchronisation.
type opSampler struct {
	obs Observer
	n   uint32
}

// start counts a call and returns when it began if it is timed, else the zero time. The
// first call is timed, so a store's series has data as soon as it is used.
func (s *opSampler) start() time.Time {
	timed := s.n%StoreLatencySampleEvery == 0
	s.n++
	if !timed {
		return time.Time{}
	}
	return time.Now()
}

// stop observes a timed call that began at t0.
func (s *opSampler) stop(t0 time.Time) {
	if !t0.IsZero() {
		s.obs.Observe(time.Since(t0).Seconds())
	}
}

// storeOps are a store partition's samplers.
type storeOps struct{ put, get, rng opSampler }

// storeCodec makes the codec of a store partition, with latency samplers of its own.
func (t *Topology) storeCodec(spec *StoreSpec, topic string) storeCodec {
	return storeCodec{spec: spec, topic: topic, ops: &storeOps{
		put: opSampler{obs: t.sensors.StoreLatency(spec.Name, StoreOpPut)},
		get: opSampler{obs: t.sensors.StoreLatency(spec.Name, StoreOpGet)},
		rng: opSampler{obs: t.sensors.StoreLatency(spec.Name, StoreOpRange)},
	}}
}
