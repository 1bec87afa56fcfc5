// Package pipeline is StoatFlow's stream-processing engine. It moves records between
// processors and knows neither Kafka nor Lua: sources receive raw bytes from whoever runs the
// topology, sinks hand bytes to a RecordCollector.
package pipeline

import (
	"bytes"
	"strconv"
)

// Header is one Kafka record header; a nil Value is Kafka's null header value. Names may
// repeat; order is significant.
type Header struct {
	Key   string
	Value []byte
}

// Headers is the ordered header list of a record.
type Headers []Header

// Last returns the value of the last header named name, as Kafka's Headers.lastHeader does.
func (h Headers) Last(name string) ([]byte, bool) {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Key == name {
			return h[i].Value, true
		}
	}
	return nil, false
}

// cloneHeaders copies h, values included.
func cloneHeaders(h Headers) Headers {
	if h == nil {
		return nil
	}
	out := make(Headers, len(h))
	for i, x := range h {
		out[i] = Header{Key: x.Key, Value: bytes.Clone(x.Value)}
	}
	return out
}

// TopicPartition names one partition of one topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String is topic-partition, as the logs and errors name a partition.
func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// Record is one record flowing through the topology. Key and Value hold deserialised values
// (see package serdes for the Go type each serde produces). Topic, Partition and Offset
// describe where the record entered the topology; they are the record context that
// callbacks see.
type Record struct {
	Key       any
	Value     any
	Timestamp int64 // milliseconds since the epoch
	Headers   Headers
	Topic     string
	Partition int32
	Offset    int64
}

// Serde turns values into bytes and back. Headers are passed so that a serde can depend on
// them (KIP-1321); a nil value serialises to nil bytes and nil bytes deserialise to nil.
// Deserialize must not keep data or return values that share its memory: data is often a
// store iterator's, valid only until its next step, while the value may be kept longer.
// Serialize may return memory of the value (the bytes of a []byte value, or of a string,
// as the string and bytes serdes do): callers never write into what it returns, and one
// that appends to it first limits its capacity to its length.
type Serde interface {
	Name() string
	Serialize(topic string, headers Headers, value any) ([]byte, error)
	Deserialize(topic string, headers Headers, data []byte) (any, error)
}

// CanonicalSerde is a Serde whose bytes depend on the value alone: whatever the topic and
// headers, serialising what Deserialize returned gives back the same bytes. A processor
// holding bytes it serialised may then deserialise them once instead of sending the value
// through the serde and back, as a store's serde would. Implementations are comparable
// (processors compare them to know two stores share one).
type CanonicalSerde interface {
	Serde
	// Canonical marks the serde; it does nothing.
	Canonical()
}
