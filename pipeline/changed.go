package pipeline

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// A KTable groupBy's repartition topic carries each Change as Kafka Streams 4.4 writes it
// (ChangedSerializer, KIP-904): the value serialised in the repartition's value serde, then a
// flag byte saying what the record holds. The key is the new grouping key in the
// repartition's key serde, and the partition murmur2 of it, as for every repartition.
//
//	[old][0]                      the old value only (the subtraction)
//	[new][1]                      the new value only (the addition)
//	[varint len(new)][new][old][2] both, when the key did not move
//
// Kafka Streams 4.4 writes only these; ChangedDeserializer also reads flags 3 to 5, the same
// three layouts with an isLatest byte (1 or 0) before the flag, and so does decode.
type changedSerde struct {
	keys, values Serde
}

const (
	changedOld byte = iota
	changedNew
	changedBoth
	changedOldLatest
	changedNewLatest
	changedBothLatest
)

// encode writes a record of the repartition topic as ChangedSerializer does. The values'
// bytes are copied, never appended to (a serde may hand out bytes it keeps: the bytes serde
// returns the value's own), into bytes carved from ctx's blocks: one allocation for many
// records rather than one per record.
func (s changedSerde) encode(ctx *Context, topic string, rec Record) ([]byte, []byte, error) {
	key, err := s.keys.Serialize(topic, rec.Headers, rec.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("serialize key for %s: %w", topic, err)
	}
	c, _ := rec.Value.(Change)
	var newData, oldData []byte
	if c.New != nil {
		if newData, err = s.values.Serialize(topic, rec.Headers, c.New); err != nil {
			return nil, nil, fmt.Errorf("serialize new value for %s: %w", topic, err)
		}
	}
	if c.Old != nil {
		if oldData, err = s.values.Serialize(topic, rec.Headers, c.Old); err != nil {
			return nil, nil, fmt.Errorf("serialize old value for %s: %w", topic, err)
		}
	}
	switch {
	case c.New != nil && c.Old != nil:
		n := int64(len(newData))
		value := binary.AppendVarint(ctx.carve(varintLen(n)+len(newData)+len(oldData)+1), n)
		return key, append(append(append(value, newData...), oldData...), changedBoth), nil
	case c.New != nil:
		return key, append(append(ctx.carve(len(newData)+1), newData...), changedNew), nil
	case c.Old != nil:
		return key, append(append(ctx.carve(len(oldData)+1), oldData...), changedOld), nil
	}
	// Kafka's error: KTableRepartitionMap never forwards such a change.
	return nil, nil, fmt.Errorf("serialize value for %s: Both old and new values are null in ChangeSerializer, which is not allowed", topic)
}

// varintLen is how many bytes binary.AppendVarint writes for v.
func varintLen(v int64) int {
	ux := uint64(v) << 1
	if v < 0 {
		ux = ^ux
	}
	return (bits.Len64(ux|1) + 6) / 7
}

var errNotChanged = errors.New("not a Change in ChangedSerializer's layout")

// decode reads a record of the repartition topic in any layout ChangedDeserializer reads.
func (s changedSerde) decode(_ *Context, in *SourceRecord) (Record, error) {
	rec := internalRecord(in)
	var err error
	if rec.Key, err = s.keys.Deserialize(in.Topic, in.Headers, in.Key); err != nil {
		return rec, &DeserializationError{Part: "key", Err: err}
	}
	b := in.Value
	if len(b) == 0 {
		return rec, &DeserializationError{Part: "value", Err: errNotChanged}
	}
	flag := b[len(b)-1]
	b = b[:len(b)-1]
	latest := true
	if flag >= changedOldLatest && flag <= changedBothLatest {
		if len(b) == 0 || b[len(b)-1] > 1 {
			return rec, &DeserializationError{Part: "value", Err: fmt.Errorf("isLatest byte: %w", errNotChanged)}
		}
		latest = b[len(b)-1] == 1
		b = b[:len(b)-1]
		flag -= changedOldLatest
	}
	var newData, oldData []byte
	switch flag {
	case changedOld:
		oldData = b
	case changedNew:
		newData = b
	case changedBoth:
		n, k := binary.Varint(b)
		if k <= 0 || n < 0 || int64(len(b)-k) < n {
			return rec, &DeserializationError{Part: "value", Err: fmt.Errorf("new value's length: %w", errNotChanged)}
		}
		newData, oldData = b[k:k+int(n)], b[k+int(n):]
	default:
		return rec, &DeserializationError{Part: "value", Err: fmt.Errorf("encoding flag %d: %w", flag, errNotChanged)}
	}
	c := Change{OutOfOrder: !latest}
	if newData != nil {
		if c.New, err = s.values.Deserialize(in.Topic, in.Headers, newData); err != nil {
			return rec, &DeserializationError{Part: "value", Err: fmt.Errorf("new value: %w", err)}
		}
	}
	if oldData != nil {
		if c.Old, err = s.values.Deserialize(in.Topic, in.Headers, oldData); err != nil {
			return rec, &DeserializationError{Part: "value", Err: fmt.Errorf("old value: %w", err)}
		}
	}
	rec.Value = c
	return rec, nil
}
