package schemas

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Confluent's wire format: a magic byte 0, the schema id as a 4-byte big-endian integer,
// then the payload (for Protobuf, the message indexes come first).
const (
	magicByte  = 0
	headerSize = 5
)

// splitHeader reads the wire-format header of data.
func splitHeader(data []byte) (id int, payload []byte, err error) {
	if len(data) < headerSize {
		return 0, nil, fmt.Errorf("%d bytes are too short for Confluent's wire format (a magic byte 0 and a 4-byte schema id come first)", len(data))
	}
	if data[0] != magicByte {
		return 0, nil, fmt.Errorf("unknown magic byte %d (Confluent's wire format starts with 0): not written by a Schema Registry serializer", data[0])
	}
	return int(int32(binary.BigEndian.Uint32(data[1:headerSize]))), data[headerSize:], nil
}

// appendHeader writes the wire-format header of schema id.
func appendHeader(dst []byte, id int) []byte {
	return binary.BigEndian.AppendUint32(append(dst, magicByte), uint32(int32(id)))
}

// maxMessageDepth bounds the Protobuf message indexes a record may claim: nested message
// declarations are never that deep, and the count comes from untrusted bytes.
const maxMessageDepth = 100

var errIndexes = errors.New("truncated Protobuf message indexes")

// readIndexes reads the Protobuf message indexes: a zig-zag varint count, then each index as
// a zig-zag varint; the single byte 0 is the shortcut for [0], the first message.
func readIndexes(b []byte) ([]int, []byte, error) {
	n, k := binary.Varint(b)
	if k <= 0 {
		return nil, nil, errIndexes
	}
	b = b[k:]
	if n == 0 {
		return firstMessage, b, nil
	}
	if n < 0 || n > maxMessageDepth {
		return nil, nil, fmt.Errorf("invalid Protobuf message index count %d", n)
	}
	idx := make([]int, n)
	for i := range idx {
		v, k := binary.Varint(b)
		if k <= 0 {
			return nil, nil, errIndexes
		}
		if v < 0 || v > 1<<20 {
			return nil, nil, fmt.Errorf("invalid Protobuf message index %d", v)
		}
		idx[i] = int(v)
		b = b[k:]
	}
	return idx, b, nil
}

var firstMessage = []int{0}

// appendIndexes writes the Protobuf message indexes, using the shortcut for [0].
func appendIndexes(dst []byte, idx []int) []byte {
	if len(idx) == 1 && idx[0] == 0 {
		return append(dst, 0)
	}
	dst = binary.AppendVarint(dst, int64(len(idx)))
	for _, i := range idx {
		dst = binary.AppendVarint(dst, int64(i))
	}
	return dst
}
