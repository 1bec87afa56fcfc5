package kafkaio

import (
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
