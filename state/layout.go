package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// LevelDB layout. Every key starts with a tag byte:
//
//	0x00 'f'                        format version
//	0x00 'n'                        next store id (uint32)
//	0x00 'c' [name]                 catalogue: store name -> id and spec (JSON)
//	0x00 'o' [id][partition]        committed changelog offset (int64)
//	0x00 'p' [id][partition]        partition state: observed stream time, duplicate seqnum
//	0x00 'm' [id][partition][key]   processor metadata (PutMeta)
//	0x00 'k'                        token of the key filter a clean Close saved (keyfilter_save.go)
//	0x01 [id][partition][store key] data
//
// id and partition are 4-byte big-endian. A store key is the store's own key bytes for
// key-value stores; window, session and versioned stores escape the record key so that all
// entries of one key are contiguous and ordered by time (see appendEscaped).
const (
	tagSys  = 0x00
	tagData = 0x01

	sysFormat    = 'f'
	sysNextID    = 'n'
	sysCatalog   = 'c'
	sysOffset    = 'o'
	sysPartMeta  = 'p'
	sysUserMeta  = 'm'
	sysKeyFilter = 'k'

	formatVersion = 1
	prefixLen     = 9
)

func dataPrefix(id uint32, partition int32) []byte {
	b := make([]byte, 0, prefixLen)
	b = append(b, tagData)
	b = binary.BigEndian.AppendUint32(b, id)
	return binary.BigEndian.AppendUint32(b, uint32(partition))
}

func sysPartitionKey(kind byte, id uint32, partition int32, suffix []byte) []byte {
	b := make([]byte, 0, 10+len(suffix))
	b = append(b, tagSys, kind)
	b = binary.BigEndian.AppendUint32(b, id)
	b = binary.BigEndian.AppendUint32(b, uint32(partition))
	return append(b, suffix...)
}

func catalogKey(name string) []byte {
	return append([]byte{tagSys, sysCatalog}, name...)
}

// prefixEnd returns the smallest key greater than every key starting with p, or nil when
// there is none.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// appendEscaped appends key so that the result sorts like key (unsigned lexicographic)
// and no encoded key is a prefix of another: 0x00 becomes 0x00 0xFF and the key ends with
// 0x00 0x01. A fixed-size time suffix after it therefore never mixes two keys' entries.
func appendEscaped(dst, key []byte) []byte {
	for {
		i := bytes.IndexByte(key, 0)
		if i < 0 {
			break
		}
		dst = append(dst, key[:i+1]...)
		dst = append(dst, 0xff)
		key = key[i+1:]
	}
	dst = append(dst, key...)
	return append(dst, 0x00, 0x01)
}

// escapedKeyEnd is the exclusive upper bound of every store key whose record key is key.
func escapedKeyEnd(key []byte) []byte {
	b := appendEscaped(nil, key)
	b[len(b)-1] = 0x02
	return b
}

// unescape returns the record key of an escaped key (terminator included). It returns
// esc itself, without copying, when the key holds no 0x00 byte.
func unescape(esc []byte) ([]byte, error) {
	if len(esc) < 2 || esc[len(esc)-2] != 0x00 || esc[len(esc)-1] != 0x01 {
		return nil, fmt.Errorf("escaped key %x has no terminator", esc)
	}
	body := esc[:len(esc)-2]
	if bytes.IndexByte(body, 0) < 0 {
		return body, nil
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); i++ {
		out = append(out, body[i])
		if body[i] == 0 {
			if i+1 >= len(body) || body[i+1] != 0xff {
				return nil, fmt.Errorf("escaped key %x has a bare 0x00", esc)
			}
			i++
		}
	}
	return out, nil
}

// appendTime appends t big-endian with the sign bit flipped, so signed order is byte order.
func appendTime(dst []byte, t int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(t)^(1<<63))
}

func readTime(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63))
}

// keyTimeBounds returns the [start, limit) store-key range of the entries of key whose
// first time field lies in [from, to].
func keyTimeBounds(key []byte, from, to int64) (start, limit []byte) {
	esc := appendEscaped(nil, key)
	start = appendTime(bytes.Clone(esc), from)
	if to == math.MaxInt64 {
		return start, escapedKeyEnd(key)
	}
	return start, appendTime(esc, to+1)
}

// keyRangeBounds returns the [start, limit) store-key range of every entry whose record key
// is in [keyFrom, keyTo]; nil bounds are unbounded.
func keyRangeBounds(keyFrom, keyTo []byte) (start, limit []byte) {
	if keyFrom != nil {
		start = appendEscaped(nil, keyFrom)
	}
	if keyTo != nil {
		limit = escapedKeyEnd(keyTo)
	}
	return start, limit
}

// splitTimedKey splits a store key [escaped key][suffix of n bytes].
func splitTimedKey(k []byte, n int) (key, suffix []byte, err error) {
	if len(k) < n+2 {
		return nil, nil, fmt.Errorf("store key %x is too short", k)
	}
	key, err = unescape(k[:len(k)-n])
	return key, k[len(k)-n:], err
}

// saturatingCutoff returns streamTime - retention + 1, the oldest time still retained,
// clamped to the int64 range.
func saturatingCutoff(streamTime, retention int64) int64 {
	if streamTime < math.MinInt64+retention {
		return math.MinInt64
	}
	return streamTime - retention + 1
}
