package kafkaio

import (
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// outMsg is a pooled sarama message with room for its key, value and headers, so that
// sending a record allocates nothing once the pool is warm: the key and value encoders
// are pointers into the struct and header names share one byte buffer.
type outMsg struct {
	msg        sarama.ProducerMessage
	key, value sarama.ByteEncoder
	headers    []sarama.RecordHeader
	headerKeys []byte
	source     *pipeline.SourceRecord // Send's source
	epoch      *sendEpoch             // the send epoch it was sent in
	tracked    bool                   // its topic's offsets are tracked (TrackOffsets)
}

// maxPooledHeaderKeys bounds the header-name buffer a pooled message keeps.
const maxPooledHeaderKeys = 4096

func (m *outMsg) fill(topic string, partition int32, key, value []byte, headers pipeline.Headers, timestampMs int64) {
	m.msg.Topic = topic
	m.msg.Partition = partition
	// sarama sets the offset only for a record the broker wrote now, not for a duplicate
	// of an earlier send: -1 tells the offset tracker the difference.
	m.msg.Offset = -1
	// A nil slice must stay a nil Encoder: it is a null key or a tombstone on the wire.
	if key != nil {
		m.key = key
		m.msg.Key = &m.key
	}
	if value != nil {
		m.value = value
		m.msg.Value = &m.value
	}
	if len(headers) > 0 {
		for _, h := range headers {
			m.headerKeys = append(m.headerKeys, h.Key...)
		}
		off := 0
		for _, h := range headers {
			end := off + len(h.Key)
			m.headers = append(m.headers, sarama.RecordHeader{Key: m.headerKeys[off:end:end], Value: h.Value})
			off = end
		}
		m.msg.Headers = m.headers
	}
	if timestampMs >= 0 {
		m.msg.Timestamp = time.UnixMilli(timestampMs)
	}
	m.msg.Metadata = m
}

// reset drops every reference to the caller's bytes and clears what sarama set.
func (m *outMsg) reset() {
	m.msg = sarama.ProducerMessage{}
	m.key, m.value, m.source, m.epoch, m.tracked = nil, nil, nil, nil, false
	clear(m.headers)
	m.headers = m.headers[:0]
	if cap(m.headerKeys) > maxPooledHeaderKeys {
		m.headerKeys = nil
	}
	m.headerKeys = m.headerKeys[:0]
}

// recycleBatch is how many messages the success goroutine gathers before it hands them
// back to the sender, and maxRecycled how many handed-back messages are kept: about as
// many as one of sarama's queues holds (producerChannelBuffer); about 1 MiB for records
// without headers, at most about 18 MiB if every message kept a header-name buffer of
// maxPooledHeaderKeys.
const (
	recycleBatch = 64
	maxRecycled  = 4096
)

// msgRecycler hands acknowledged messages back from sarama's success goroutine to the
// sending goroutine with one lock per recycleBatch messages: each side keeps its own stack
// and the sender takes the returned stack whole when its own is empty. sync.Pool cost a
// steal from the other processor's cache on most Gets (the two goroutines run on
// different Ps), and dropped its messages at every garbage collection.
type msgRecycler struct {
	free []*outMsg // the sender's
	done []*outMsg // the success goroutine's, not yet handed back

	mu   sync.Mutex
	back []*outMsg // handed back, for the sender to take
}

// get returns a reset message; only the sender calls it.
func (r *msgRecycler) get() *outMsg {
	if len(r.free) == 0 {
		r.mu.Lock()
		r.free, r.back = r.back, r.free
		r.mu.Unlock()
		if len(r.free) == 0 {
			return new(outMsg)
		}
	}
	last := len(r.free) - 1
	m := r.free[last]
	r.free[last] = nil
	r.free = r.free[:last]
	return m
}

// unused takes back a message the sender got and did not send.
func (r *msgRecycler) unused(m *outMsg) {
	m.reset()
	r.free = append(r.free, m)
}

// recycle takes back an acknowledged message; only the success goroutine calls it.
func (r *msgRecycler) recycle(m *outMsg) {
	m.reset()
	r.done = append(r.done, m)
	if len(r.done) < recycleBatch {
		return
	}
	r.mu.Lock()
	if len(r.back) < maxRecycled {
		r.back = append(r.back, r.done...)
	}
	r.mu.Unlock()
	clear(r.done)
	r.done = r.done[:0]
}
