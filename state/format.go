package state

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Byte formats shared with Kafka Streams (changelog keys, store values). The LevelDB
// layout in layout.go is StoatFlow's own; these are what other Kafka Streams deployments
// read from the changelog and what headers-aware stores keep in their values.

// NoTimestamp is Kafka's "no timestamp" (-1), reported for values that carry none.
const NoTimestamp int64 = -1

const (
	tsSize      = 8
	seqSize     = 4
	windowTail  = tsSize + seqSize // [start][seq] after the key in a window changelog key
	sessionTail = 2 * tsSize       // [end][start] after the key in a session changelog key
)

// appendTimestamped appends Kafka Streams' timestamped value: [8-byte BE ts][value].
func appendTimestamped(dst []byte, value []byte, ts int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(ts))
	return append(dst, value...)
}

// splitTimestamped splits a timestamped value into its raw value and timestamp.
func splitTimestamped(b []byte) (value []byte, ts int64, err error) {
	if len(b) < tsSize {
		return nil, 0, fmt.Errorf("timestamped value of %d bytes is shorter than its 8-byte timestamp", len(b))
	}
	return b[tsSize:], int64(binary.BigEndian.Uint64(b)), nil
}

// appendVarint appends v as a Kafka zig-zag varint (ByteUtils.writeVarint).
func appendVarint(dst []byte, v int32) []byte {
	u := uint32(v<<1) ^ uint32(v>>31)
	for u >= 0x80 {
		dst = append(dst, byte(u)|0x80)
		u >>= 7
	}
	return append(dst, byte(u))
}

// readVarint reads a Kafka zig-zag varint and returns it with the bytes it used.
func readVarint(b []byte) (int32, int, error) {
	var u uint32
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, 0, fmt.Errorf("varint truncated after %d bytes", i)
		}
		c := b[i]
		if i == 4 && c > 0x0f {
			return 0, 0, fmt.Errorf("varint longer than 32 bits")
		}
		u |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(u>>1) ^ -int32(u&1), i + 1, nil
		}
	}
	return 0, 0, fmt.Errorf("varint longer than 5 bytes")
}

// appendHeaders appends KIP-1271's headers block: [varint size][count varint]{[key len]
// [key][value len or -1][value]}; no headers is the single byte size 0.
func appendHeaders(dst []byte, headers pipeline.Headers) []byte {
	if len(headers) == 0 {
		return appendVarint(dst, 0)
	}
	size := varintLen(int32(len(headers)))
	for _, h := range headers {
		size += varintLen(int32(len(h.Key))) + len(h.Key)
		if h.Value == nil {
			size += varintLen(-1)
		} else {
			size += varintLen(int32(len(h.Value))) + len(h.Value)
		}
	}
	dst = appendVarint(dst, int32(size))
	dst = appendVarint(dst, int32(len(headers)))
	for _, h := range headers {
		dst = appendVarint(dst, int32(len(h.Key)))
		dst = append(dst, h.Key...)
		if h.Value == nil {
			dst = appendVarint(dst, -1)
			continue
		}
		dst = appendVarint(dst, int32(len(h.Value)))
		dst = append(dst, h.Value...)
	}
	return dst
}

func varintLen(v int32) int {
	u := uint32(v<<1) ^ uint32(v>>31)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

// skipHeaders returns what follows the headers block of a headers-aware value.
func skipHeaders(b []byte) ([]byte, error) {
	size, n, err := readVarint(b)
	if err != nil {
		return nil, fmt.Errorf("headers size: %w", err)
	}
	if size < 0 || int(size) > len(b)-n {
		return nil, fmt.Errorf("headers size %d does not fit in a value of %d bytes", size, len(b))
	}
	return b[n+int(size):], nil
}

// parseHeaders decodes the headers block at the start of a headers-aware value and returns
// the headers and the payload after them. Header values alias b.
func parseHeaders(b []byte) (pipeline.Headers, []byte, error) {
	size, n, err := readVarint(b)
	if err != nil {
		return nil, nil, fmt.Errorf("headers size: %w", err)
	}
	if size < 0 || int(size) > len(b)-n {
		return nil, nil, fmt.Errorf("headers size %d does not fit in a value of %d bytes", size, len(b))
	}
	block, payload := b[n:n+int(size)], b[n+int(size):]
	if size == 0 {
		return nil, payload, nil
	}
	count, n, err := readVarint(block)
	if err != nil {
		return nil, nil, fmt.Errorf("headers count: %w", err)
	}
	if count < 0 || int(count) > len(block) {
		return nil, nil, fmt.Errorf("headers count %d is invalid for %d bytes", count, len(block))
	}
	block = block[n:]
	headers := make(pipeline.Headers, 0, count)
	for i := int32(0); i < count; i++ {
		var key, value []byte
		if key, block, err = readLengthPrefixed(block); err != nil || key == nil {
			return nil, nil, fmt.Errorf("header %d key: %v", i, errOrNull(err))
		}
		if !utf8.Valid(key) {
			return nil, nil, fmt.Errorf("header %d key is not UTF-8", i)
		}
		if value, block, err = readLengthPrefixed(block); err != nil {
			return nil, nil, fmt.Errorf("header %d value: %w", i, err)
		}
		headers = append(headers, pipeline.Header{Key: string(key), Value: value})
	}
	if len(block) != 0 {
		return nil, nil, fmt.Errorf("headers block has %d bytes after its %d headers", len(block), count)
	}
	return headers, payload, nil
}

func errOrNull(err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("null key")
}

// readLengthPrefixed reads [varint length][bytes]; length -1 is a nil (null) slice.
func readLengthPrefixed(b []byte) (field, rest []byte, err error) {
	l, n, err := readVarint(b)
	if err != nil {
		return nil, nil, err
	}
	b = b[n:]
	if l == -1 {
		return nil, b, nil
	}
	if l < 0 || int(l) > len(b) {
		return nil, nil, fmt.Errorf("length %d does not fit in %d bytes", l, len(b))
	}
	return b[:l:l], b[l:], nil
}

// appendWindowChangelogKey appends Kafka Streams' window store key [key][start][seq].
func appendWindowChangelogKey(dst, key []byte, start int64, seq int32) []byte {
	dst = append(dst, key...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(start))
	return binary.BigEndian.AppendUint32(dst, uint32(seq))
}

// splitWindowChangelogKey splits [key][start][seq].
func splitWindowChangelogKey(b []byte) (key []byte, start int64, seq int32, err error) {
	if len(b) < windowTail {
		return nil, 0, 0, fmt.Errorf("window key of %d bytes is shorter than its 12-byte suffix", len(b))
	}
	k := len(b) - windowTail
	return b[:k], int64(binary.BigEndian.Uint64(b[k:])), int32(binary.BigEndian.Uint32(b[k+tsSize:])), nil
}

// appendSessionChangelogKey appends Kafka Streams' session key [key][end][start].
func appendSessionChangelogKey(dst, key []byte, start, end int64) []byte {
	dst = append(dst, key...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(end))
	return binary.BigEndian.AppendUint64(dst, uint64(start))
}

// splitSessionChangelogKey splits [key][end][start].
func splitSessionChangelogKey(b []byte) (key []byte, start, end int64, err error) {
	if len(b) < sessionTail {
		return nil, 0, 0, fmt.Errorf("session key of %d bytes is shorter than its 16-byte suffix", len(b))
	}
	k := len(b) - sessionTail
	return b[:k], int64(binary.BigEndian.Uint64(b[k+tsSize:])), int64(binary.BigEndian.Uint64(b[k:])), nil
}
