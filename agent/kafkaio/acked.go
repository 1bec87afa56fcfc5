package kafkaio

import (
	"sync"

	"github.com/stoatflow/stoatflow/pipeline"
)

// ackTracker keeps the highest acknowledged offset per partition of the tracked topics.
type ackTracker struct {
	track func(topic string) bool

	mu      sync.Mutex
	offsets map[pipeline.TopicPartition]int64
}

// record notes the offset of an acknowledged record that Send found tracked.
func (t *ackTracker) record(tp pipeline.TopicPartition, offset int64) {
	t.mu.Lock()
	if off, ok := t.offsets[tp]; !ok || offset > off {
		t.offsets[tp] = offset
	}
	t.mu.Unlock()
}

// take returns the offsets collected so far and starts afresh.
func (t *ackTracker) take() map[pipeline.TopicPartition]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.offsets
	t.offsets = make(map[pipeline.TopicPartition]int64)
	return out
}

// TrackOffsets makes the producer remember, for the topics where track(topic) is true,
// the highest acknowledged offset per partition (the agent tracks its changelog topics:
// a store keeps the changelog offsets it has applied, KIP-1035). track is asked at every
// Send, on the sender's goroutine, and its answer goes with the record: Sealed.WaitTracked
// counts the tracked records, and their acknowledgements are the offsets. It must be
// quick. A nil track stops tracking. Offsets collected before the call are dropped.
func (p *Producer) TrackOffsets(track func(topic string) bool) {
	if track == nil {
		p.acked.Store(nil)
		return
	}
	p.acked.Store(&ackTracker{
		track:   track,
		offsets: make(map[pipeline.TopicPartition]int64),
	})
}

// AckedOffsets returns the highest acknowledged offset per tracked partition since the
// previous call (or TrackOffsets, or AbortTxn) and clears them. After Flush or CommitTxn
// returns nil it covers every record sent before. Empty when nothing is tracked.
func (p *Producer) AckedOffsets() map[pipeline.TopicPartition]int64 {
	t := p.acked.Load()
	if t == nil {
		return map[pipeline.TopicPartition]int64{}
	}
	return t.take()
}
