package pipeline

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// bufferedChange is one entry of a suppression buffer: a key's latest update with its record
// context. It is stored in the layout of Kafka Streams' suppress buffer changelog values
// (BufferValue v3, then the buffer time): the record context (timestamp, offset, topic,
// partition, headers), the prior value (before the first buffered update), the old value
// (-2 when equal to the prior value), the new value, and the 8-byte buffer time. Lengths
// are big-endian int32, -1 for null.
type bufferedChange struct {
	Timestamp  int64
	Offset     int64
	Topic      string
	Partition  int32
	Headers    Headers
	Prior      []byte
	Old        []byte
	New        []byte
	BufferTime int64
}

const (
	nullLength      = -1
	samePriorLength = -2
	// suppressBufferVersion is the layout's version in the "v" header of the buffer's
	// changelog records, as Kafka Streams' InMemoryTimeOrderedKeyValueChangeBuffer writes it.
	suppressBufferVersion = 3
)

func appendBytes(b, v []byte) []byte {
	if v == nil {
		return binary.BigEndian.AppendUint32(b, uint32(0xFFFFFFFF))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

func (e bufferedChange) encode() []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(e.Timestamp))
	b = binary.BigEndian.AppendUint64(b, uint64(e.Offset))
	b = appendBytes(b, []byte(e.Topic))
	b = binary.BigEndian.AppendUint32(b, uint32(e.Partition))
	b = binary.BigEndian.AppendUint32(b, uint32(len(e.Headers)))
	for _, h := range e.Headers {
		b = appendBytes(b, []byte(h.Key))
		b = appendBytes(b, h.Value)
	}
	b = appendBytes(b, e.Prior)
	switch {
	case e.Old == nil:
		b = binary.BigEndian.AppendUint32(b, uint32(0xFFFFFFFF))
	case e.Prior != nil && string(e.Old) == string(e.Prior):
		b = binary.BigEndian.AppendUint32(b, uint32(0xFFFFFFFE))
	default:
		b = appendBytes(b, e.Old)
	}
	b = appendBytes(b, e.New)
	return binary.BigEndian.AppendUint64(b, uint64(e.BufferTime))
}

var errShortBuffer = errors.New("truncated suppression buffer entry")

type bufferReader struct {
	b   []byte
	err error
}

func (r *bufferReader) take(n int) []byte {
	if r.err != nil || n > len(r.b) {
		r.err = errShortBuffer
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *bufferReader) int64() int64 {
	if v := r.take(8); v != nil {
		return int64(binary.BigEndian.Uint64(v))
	}
	return 0
}

func (r *bufferReader) int32() int32 {
	if v := r.take(4); v != nil {
		return int32(binary.BigEndian.Uint32(v))
	}
	return 0
}

func (r *bufferReader) sized(n int32) []byte {
	switch {
	case n == nullLength:
		return nil
	case n < 0:
		if r.err == nil {
			r.err = fmt.Errorf("suppression buffer entry: invalid length %d", n)
		}
		return nil
	}
	return append([]byte{}, r.take(int(n))...)
}

func (r *bufferReader) bytes() []byte { return r.sized(r.int32()) }

func decodeBufferedChange(b []byte) (bufferedChange, error) {
	r := &bufferReader{b: b}
	var e bufferedChange
	e.Timestamp = r.int64()
	e.Offset = r.int64()
	e.Topic = string(r.bytes())
	e.Partition = r.int32()
	n := r.int32()
	if n < 0 || int(n) > len(r.b) {
		return e, fmt.Errorf("suppression buffer entry: invalid header count %d", n)
	}
	for range n {
		k := r.bytes()
		e.Headers = append(e.Headers, Header{Key: string(k), Value: r.bytes()})
	}
	e.Prior = r.bytes()
	if n := r.int32(); n == samePriorLength {
		e.Old = e.Prior
	} else {
		e.Old = r.sized(n)
	}
	e.New = r.bytes()
	e.BufferTime = r.int64()
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("suppression buffer entry: %d bytes left over", len(r.b))
	}
	return e, r.err
}

// bufferIndex orders one partition's buffered keys by (buffer time, key bytes), as Kafka
// Streams' BufferKey does, and counts what the buffer holds.
type bufferIndex struct {
	entries map[string]bufferSlot
	order   []bufferRef
	bytes   int64
}

type bufferSlot struct{ time, size int64 }

type bufferRef struct {
	time int64
	key  string
}

func (a bufferRef) less(b bufferRef) bool {
	return a.time < b.time || (a.time == b.time && a.key < b.key)
}

// put adds a key at time t, or updates its size: a buffered key keeps its position.
func (x *bufferIndex) put(key string, t, size int64) {
	if slot, ok := x.entries[key]; ok {
		x.bytes += size - slot.size
		x.entries[key] = bufferSlot{time: slot.time, size: size}
		return
	}
	ref := bufferRef{time: t, key: key}
	i := sort.Search(len(x.order), func(i int) bool { return ref.less(x.order[i]) })
	x.order = append(x.order, bufferRef{})
	copy(x.order[i+1:], x.order[i:])
	x.order[i] = ref
	x.entries[key] = bufferSlot{time: t, size: size}
	x.bytes += size
}

// remove drops the oldest entry.
func (x *bufferIndex) remove() {
	ref := x.order[0]
	x.order = x.order[1:]
	x.bytes -= x.entries[ref.key].size
	delete(x.entries, ref.key)
}

// bufferValueBytes serialises a value of a buffer entry (a buffered update's old or new
// value) with the buffered table's value serde; nil stays nil.
func bufferValueBytes(serde Serde, store *KeyValueStore, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	b, err := serde.Serialize(store.topic, nil, v)
	if err != nil {
		return nil, fmt.Errorf("store %s: value: %w", store.Name(), err)
	}
	return b, nil
}

// bufferValue reads back what bufferValueBytes wrote.
func bufferValue(serde Serde, store *KeyValueStore, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	v, err := serde.Deserialize(store.topic, nil, b)
	if err != nil {
		return nil, fmt.Errorf("store %s: value: %w", store.Name(), err)
	}
	return v, nil
}
