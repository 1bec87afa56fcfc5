package kafkaio

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// outMsg is a pooled record with room for its headers, so that sending a record allocates
// nothing once the pool is warm: the record is sarama's wire type, its header pointers
// point into the struct and header names share one byte buffer.
type outMsg struct {
	rec        sarama.Record
	headers    []sarama.RecordHeader
	headerPtrs []*sarama.RecordHeader
	headerKeys []byte
	topic      string
	requested  int32                  // Send's partition: -1 lets the key choose
	ts         int64                  // the record's timestamp, Unix milliseconds
	size       int                    // recordSize of the record
	source     *pipeline.SourceRecord // Send's source
	epoch      *sendEpoch             // the send epoch it was sent in
	tracked    bool                   // its topic's offsets are tracked (TrackOffsets)
}

// maxPooledHeaderKeys bounds the header-name buffer a pooled message keeps.
const maxPooledHeaderKeys = 4096

// recordOverhead is the most a v2 record adds to its key, value and headers (length,
// attributes, timestamp and offset deltas, key and value lengths, header count), and
// headerOverhead what a header adds: the bound sarama sizes records with.
const (
	recordOverhead = 5*binary.MaxVarintLen32 + binary.MaxVarintLen64 + 1
	headerOverhead = 2 * binary.MaxVarintLen32
)

// recordSize bounds the encoded size of a record in a record batch.
func recordSize(key, value []byte, headers pipeline.Headers) int {
	return RecordSize(len(key), len(value), headers)
}

// RecordSize bounds the encoded size of a record of these sizes in a record batch: what
// max.request.size is compared with.
func RecordSize(keyLen, valueLen int, headers pipeline.Headers) int {
	size := recordOverhead + keyLen + valueLen
	for _, h := range headers {
		size += len(h.Key) + len(h.Value) + headerOverhead
	}
	return size
}

// RecordTooLarge says why a record of these sizes can never be sent under maxBytes
// (max.request.size), or nil: the test Send applies before it sends, for callers that must
// know before they write (a store's changelog record).
func RecordTooLarge(keyLen, valueLen int, headers pipeline.Headers, maxBytes int) error {
	if size := RecordSize(keyLen, valueLen, headers); size > maxBytes {
		return tooLarge(size, maxBytes)
	}
	return nil
}

func tooLarge(size, maxBytes int) error {
	return fmt.Errorf("%w: %d bytes when serialized, max.request.size is %d", ErrRecordTooLarge, size, maxBytes)
}

// fill makes m the record; a nil key or value stays nil: a null key or a tombstone on the
// wire. A negative timestamp is now.
func (m *outMsg) fill(key, value []byte, headers pipeline.Headers, timestampMs int64, size int) {
	m.rec.Key, m.rec.Value = key, value
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
		// The pointers are taken once every header is in place: appending moves them.
		for i := range m.headers {
			m.headerPtrs = append(m.headerPtrs, &m.headers[i])
		}
		m.rec.Headers = m.headerPtrs
	}
	if timestampMs < 0 {
		timestampMs = time.Now().UnixMilli()
	}
	m.ts, m.size = timestampMs, size
}

// reset drops every reference to the caller's bytes.
func (m *outMsg) reset() {
	m.rec = sarama.Record{}
	m.topic, m.source, m.epoch, m.tracked = "", nil, nil, false
	clear(m.headers)
	m.headers = m.headers[:0]
	clear(m.headerPtrs)
	m.headerPtrs = m.headerPtrs[:0]
	if cap(m.headerKeys) > maxPooledHeaderKeys {
		m.headerKeys = nil
	}
	m.headerKeys = m.headerKeys[:0]
}

// recycleBatch is how many acknowledged messages a broker sender gathers before it hands
// them back to the sending goroutine, and maxRecycled how many handed-back messages are
// kept: about 1 MiB for records without headers, at most about 18 MiB if every message
// kept a header-name buffer of maxPooledHeaderKeys.
const (
	recycleBatch = 64
	maxRecycled  = 4096
)

// msgRecycler hands acknowledged messages back from the broker senders to the sending
// goroutines with one lock per recycleBatch messages: each broker sender gathers them in its
// own slice, and each sending goroutine keeps its own stack (its Lane's) and takes the
// returned stack whole when its own is empty. sync.Pool cost a steal from the other
// processor's cache on most Gets (the goroutines run on different Ps), and dropped its
// messages at every garbage collection.
type msgRecycler struct {
	mu   sync.Mutex
	back []*outMsg // handed back, for a sending goroutine to take
}

// get returns a reset message from free, the calling goroutine's own stack.
func (r *msgRecycler) get(free *[]*outMsg) *outMsg {
	if len(*free) == 0 {
		r.mu.Lock()
		*free, r.back = r.back, *free
		r.mu.Unlock()
		if len(*free) == 0 {
			return new(outMsg)
		}
	}
	last := len(*free) - 1
	m := (*free)[last]
	(*free)[last] = nil
	*free = (*free)[:last]
	return m
}

// recycle takes back an acknowledged message into done, the calling broker sender's own
// slice, and hands done back once it holds recycleBatch messages.
func (r *msgRecycler) recycle(done *[]*outMsg, m *outMsg) {
	m.reset()
	*done = append(*done, m)
	if len(*done) < recycleBatch {
		return
	}
	r.mu.Lock()
	if len(r.back) < maxRecycled {
		r.back = append(r.back, *done...)
	}
	r.mu.Unlock()
	clear(*done)
	*done = (*done)[:0]
}
