package schemas

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
)

// maxAvroDepth bounds the nesting of a decoded value: only a recursive schema nests without
// bound, and the bytes come from outside.
const maxAvroDepth = 1000

// maxZeroWidthItems bounds an array or map block whose items take no bytes (nulls, empty
// records), which a few bytes could otherwise make as large as memory.
const maxZeroWidthItems = 1 << 16

var errAvroShort = errors.New("the Avro data ends early")

// maxSharedPayload bounds the payloads whose strings share one copy of the payload: fewer
// allocations per record, while a short string kept of a large record holds only itself.
const maxSharedPayload = 4 << 10

type avroReader struct {
	b     []byte
	pos   int
	depth int
	text  string // the payload as one string, made on the first string read; see maxSharedPayload
}

func (r *avroReader) long() (int64, error) {
	v, n := binary.Varint(r.b[r.pos:])
	if n <= 0 {
		if n == 0 {
			return 0, errAvroShort
		}
		return 0, errors.New("invalid Avro varint (longer than 64 bits)")
	}
	r.pos += n
	return v, nil
}

// take returns the next n bytes, still aliasing the input.
func (r *avroReader) take(n int64) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("invalid negative Avro length %d", n)
	}
	if n > int64(len(r.b)-r.pos) {
		return nil, errAvroShort
	}
	b := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

func (r *avroReader) bytes() ([]byte, error) {
	n, err := r.long()
	if err != nil {
		return nil, err
	}
	return r.take(n)
}

// string reads a string value; the strings of a small payload are slices of one copy of it.
func (r *avroReader) string() (string, error) {
	b, err := r.bytes()
	if err != nil || len(b) == 0 {
		return "", err
	}
	if len(r.b) > maxSharedPayload {
		return string(b), nil
	}
	if r.text == "" {
		r.text = string(r.b)
	}
	end := r.pos
	return r.text[end-len(b) : end], nil
}

// blockCount reads the item count of an array or map block; a negative count is followed by
// the block's size in bytes, which the reader does not need.
func (r *avroReader) blockCount(items *avroNode) (int, error) {
	n, err := r.long()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		if n == math.MinInt64 {
			return 0, errors.New("invalid Avro block count")
		}
		n = -n
		if _, err := r.long(); err != nil {
			return 0, err
		}
	}
	limit := int64(len(r.b) - r.pos)
	if zeroWidth(items, 0) {
		limit = maxZeroWidthItems
	}
	if n > limit {
		return 0, fmt.Errorf("the Avro block of %d items is larger than the data", n)
	}
	return int(n), nil
}

// zeroWidth reports whether values of n may take no bytes. A record nested deeper than a few
// levels counts as zero-width: that only errs toward the smaller bound.
func zeroWidth(n *avroNode, depth int) bool {
	switch n.kind {
	case avroNull:
		return true
	case avroRecord:
		if depth > 4 {
			return true
		}
		for _, f := range n.fields {
			if !zeroWidth(f.node, depth+1) {
				return false
			}
		}
		return true
	case avroFixed:
		return n.size == 0
	}
	return false
}

func (r *avroReader) read(n *avroNode) (any, error) {
	switch n.kind {
	case avroNull:
		return nil, nil
	case avroBoolean:
		if r.pos >= len(r.b) {
			return nil, errAvroShort
		}
		b := r.b[r.pos]
		r.pos++
		if b > 1 {
			return nil, fmt.Errorf("invalid Avro boolean byte %d", b)
		}
		return b == 1, nil
	case avroInt:
		v, err := r.long()
		if err != nil {
			return nil, err
		}
		if v < math.MinInt32 || v > math.MaxInt32 {
			return nil, fmt.Errorf("the Avro int %d is out of 32-bit range", v)
		}
		return v, nil
	case avroLong:
		return r.long()
	case avroFloat:
		b, err := r.take(4)
		if err != nil {
			return nil, err
		}
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), nil
	case avroDouble:
		b, err := r.take(8)
		if err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	case avroBytes:
		b, err := r.bytes()
		if err != nil {
			return nil, err
		}
		return append([]byte(nil), b...), nil
	case avroString:
		return r.string()
	case avroRecord:
		return r.record(n)
	case avroEnum:
		i, err := r.long()
		if err != nil {
			return nil, err
		}
		if i < 0 || i >= int64(len(n.symbols)) {
			return nil, fmt.Errorf("enum %s has no symbol %d", n.name, i)
		}
		return n.symbols[i], nil
	case avroArray:
		return r.array(n)
	case avroMap:
		return r.mapValue(n)
	case avroUnion:
		i, err := r.long()
		if err != nil {
			return nil, err
		}
		if i < 0 || i >= int64(len(n.branches)) {
			return nil, fmt.Errorf("union has no branch %d", i)
		}
		return r.read(n.branches[i])
	case avroFixed:
		b, err := r.take(int64(n.size))
		if err != nil {
			return nil, err
		}
		return append([]byte(nil), b...), nil
	case avroDecimalBytes:
		b, err := r.bytes()
		if err != nil {
			return nil, err
		}
		return decimalText(b, n.scale), nil
	case avroDecimalFixed:
		b, err := r.take(int64(n.size))
		if err != nil {
			return nil, err
		}
		return decimalText(b, n.scale), nil
	}
	return nil, fmt.Errorf("unknown Avro node kind %d", n.kind)
}

func (r *avroReader) record(n *avroNode) (any, error) {
	if r.depth++; r.depth > maxAvroDepth {
		return nil, fmt.Errorf("the Avro value nests deeper than %d levels", maxAvroDepth)
	}
	defer func() { r.depth-- }()
	m := make(map[string]any, len(n.fields))
	for i := range n.fields {
		f := &n.fields[i]
		v, err := r.read(f.node)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.name, err)
		}
		m[f.name] = v
	}
	return m, nil
}

func (r *avroReader) array(n *avroNode) (any, error) {
	out := []any{}
	for {
		count, err := r.blockCount(n.items)
		if err != nil {
			return nil, err
		}
		if count == 0 {
			return out, nil
		}
		out = growAny(out, count)
		for range count {
			v, err := r.read(n.items)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", len(out), err)
			}
			out = append(out, v)
		}
	}
}

func growAny(s []any, n int) []any {
	if cap(s)-len(s) >= n {
		return s
	}
	out := make([]any, len(s), len(s)+n)
	copy(out, s)
	return out
}

func (r *avroReader) mapValue(n *avroNode) (any, error) {
	out := map[string]any{}
	for {
		count, err := r.blockCount(n.items)
		if err != nil {
			return nil, err
		}
		if count == 0 {
			return out, nil
		}
		for range count {
			k, err := r.string()
			if err != nil {
				return nil, err
			}
			v, err := r.read(n.items)
			if err != nil {
				return nil, fmt.Errorf("[%q]: %w", k, err)
			}
			out[k] = v
		}
	}
}

// decimalText renders a decimal's unscaled two's-complement big-endian bytes as its exact
// decimal text, e.g. "-12.50" for -1250 at scale 2.
func decimalText(b []byte, scale int) string {
	u := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(len(b))*8))
	}
	neg := u.Sign() < 0
	digits := u.Abs(u).String()
	if scale > 0 {
		for len(digits) <= scale {
			digits = "0" + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}
