package schemas

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
)

// maxAvroDepth bounds the nesting of a decoded value: only a recursive schema nests without
// bound, and the bytes come from outside.
const maxAvroDepth = 1000

// maxZeroWidthItems bounds an array or map block whose items take no bytes (nulls, empty
// records), which a few bytes could otherwise make as large as memory.
const maxZeroWidthItems = 1 << 16

var (
	errAvroShort  = errors.New("the Avro data ends early")
	errAvroVarint = errors.New("invalid Avro varint (longer than 64 bits)")
)

// maxSharedPayload bounds the payloads read as one string whose slices are their string
// values: one allocation per record instead of one per string, while a short string kept of
// a large record holds only itself.
const maxSharedPayload = 4 << 10

// Builder makes the values the Avro decoder reads, so that a runtime can have records built
// straight into its own values (the Lua runtime builds its tables from the bytes) instead of
// converting the package's Go values. A record or map is made empty with room for size
// entries and filled by Set; an array is made from its items, which the builder may keep.
type Builder[V any] interface {
	Null() V
	Bool(b bool) V
	// Long is every Avro int and long, and the logical types on them.
	Long(i int64) V
	// Double is every Avro float and double.
	Double(f float64) V
	// String is every Avro string, enum symbol and decimal (as its exact text).
	String(s string) V
	// Bytes is every Avro bytes and fixed; b is the builder's.
	Bytes(b []byte) V
	Array(items []V) V
	Record(size int) V
	Map(size int) V
	// Set puts a field of a record or an entry of a map.
	Set(recordOrMap V, key string, v V)
}

// goBuilder builds the package's Go values (see the package comment).
type goBuilder struct{}

func (goBuilder) Null() any                  { return nil }
func (goBuilder) Bool(b bool) any            { return b }
func (goBuilder) Long(i int64) any           { return i }
func (goBuilder) Double(f float64) any       { return f }
func (goBuilder) String(s string) any        { return s }
func (goBuilder) Bytes(b []byte) any         { return b }
func (goBuilder) Array(items []any) any      { return items }
func (goBuilder) Record(size int) any        { return make(map[string]any, size) }
func (goBuilder) Map(size int) any           { return make(map[string]any, size) }
func (goBuilder) Set(m any, k string, v any) { m.(map[string]any)[k] = v }

// avroInput is what the decoder reads from: the payload's bytes, or one string copy of them
// whose slices become string values without copying.
type avroInput interface{ ~string | ~[]byte }

// decodeAvro reads one value of n from the whole of payload.
func decodeAvro[T avroInput, V any](n *avroNode, payload T, b Builder[V]) (V, error) {
	r := avroReader[T, V]{b: payload, build: b}
	v, err := r.read(n)
	if err != nil {
		return v, err
	}
	if r.pos != len(r.b) {
		return v, fmt.Errorf("%d bytes left after the Avro value (written with another schema?)", len(r.b)-r.pos)
	}
	return v, nil
}

type avroReader[T avroInput, V any] struct {
	b     T
	pos   int
	depth int
	build Builder[V]
}

// long reads a zig-zag varint as encoding/binary.Varint does, from either input type.
func (r *avroReader[T, V]) long() (int64, error) {
	var x uint64
	var s uint
	for i := 0; r.pos+i < len(r.b); i++ {
		if i == binary.MaxVarintLen64 {
			return 0, errAvroVarint
		}
		c := r.b[r.pos+i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				return 0, errAvroVarint
			}
			x |= uint64(c) << s
			r.pos += i + 1
			v := int64(x >> 1)
			if x&1 != 0 {
				v = ^v
			}
			return v, nil
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, errAvroShort
}

// take returns the next n bytes, still aliasing the input.
func (r *avroReader[T, V]) take(n int64) (T, error) {
	if n < 0 {
		return r.b[:0], fmt.Errorf("invalid negative Avro length %d", n)
	}
	if n > int64(len(r.b)-r.pos) {
		return r.b[:0], errAvroShort
	}
	b := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

func (r *avroReader[T, V]) bytes() (T, error) {
	n, err := r.long()
	if err != nil {
		return r.b[:0], err
	}
	return r.take(n)
}

// blockCount reads the item count of an array or map block; a negative count is followed by
// the block's size in bytes, which the reader does not need.
func (r *avroReader[T, V]) blockCount(items *avroNode) (int, error) {
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

func (r *avroReader[T, V]) read(n *avroNode) (V, error) {
	var zero V
	switch n.kind {
	case avroNull:
		return r.build.Null(), nil
	case avroBoolean:
		if r.pos >= len(r.b) {
			return zero, errAvroShort
		}
		b := r.b[r.pos]
		r.pos++
		if b > 1 {
			return zero, fmt.Errorf("invalid Avro boolean byte %d", b)
		}
		return r.build.Bool(b == 1), nil
	case avroInt:
		v, err := r.long()
		if err != nil {
			return zero, err
		}
		if v < math.MinInt32 || v > math.MaxInt32 {
			return zero, fmt.Errorf("the Avro int %d is out of 32-bit range", v)
		}
		return r.build.Long(v), nil
	case avroLong:
		v, err := r.long()
		if err != nil {
			return zero, err
		}
		return r.build.Long(v), nil
	case avroFloat:
		b, err := r.take(4)
		if err != nil {
			return zero, err
		}
		return r.build.Double(float64(math.Float32frombits(uint32(littleEndian(b))))), nil
	case avroDouble:
		b, err := r.take(8)
		if err != nil {
			return zero, err
		}
		return r.build.Double(math.Float64frombits(littleEndian(b))), nil
	case avroBytes:
		b, err := r.bytes()
		if err != nil {
			return zero, err
		}
		return r.build.Bytes(append([]byte(nil), b...)), nil
	case avroString:
		b, err := r.bytes()
		if err != nil {
			return zero, err
		}
		return r.build.String(string(b)), nil
	case avroRecord:
		return r.record(n)
	case avroEnum:
		i, err := r.long()
		if err != nil {
			return zero, err
		}
		if i < 0 || i >= int64(len(n.symbols)) {
			return zero, fmt.Errorf("enum %s has no symbol %d", n.name, i)
		}
		return r.build.String(n.symbols[i]), nil
	case avroArray:
		return r.array(n)
	case avroMap:
		return r.mapValue(n)
	case avroUnion:
		i, err := r.long()
		if err != nil {
			return zero, err
		}
		if i < 0 || i >= int64(len(n.branches)) {
			return zero, fmt.Errorf("union has no branch %d", i)
		}
		return r.read(n.branches[i])
	case avroFixed:
		b, err := r.take(int64(n.size))
		if err != nil {
			return zero, err
		}
		return r.build.Bytes(append([]byte(nil), b...)), nil
	case avroDecimalBytes:
		b, err := r.bytes()
		if err != nil {
			return zero, err
		}
		return r.build.String(decimalText([]byte(b), n.scale)), nil
	case avroDecimalFixed:
		b, err := r.take(int64(n.size))
		if err != nil {
			return zero, err
		}
		return r.build.String(decimalText([]byte(b), n.scale)), nil
	}
	return zero, fmt.Errorf("unknown Avro node kind %d", n.kind)
}

// littleEndian reads the little-endian unsigned integer of b's 4 or 8 bytes.
func littleEndian[T avroInput](b T) uint64 {
	var u uint64
	for i := len(b) - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	return u
}

func (r *avroReader[T, V]) record(n *avroNode) (V, error) {
	var zero V
	if r.depth++; r.depth > maxAvroDepth {
		return zero, fmt.Errorf("the Avro value nests deeper than %d levels", maxAvroDepth)
	}
	defer func() { r.depth-- }()
	m := r.build.Record(len(n.fields))
	for i := range n.fields {
		f := &n.fields[i]
		v, err := r.read(f.node)
		if err != nil {
			return zero, fmt.Errorf("field %s: %w", f.name, err)
		}
		r.build.Set(m, f.name, v)
	}
	return m, nil
}

func (r *avroReader[T, V]) array(n *avroNode) (V, error) {
	var zero V
	out := []V{}
	for {
		count, err := r.blockCount(n.items)
		if err != nil {
			return zero, err
		}
		if count == 0 {
			return r.build.Array(out), nil
		}
		out = slices.Grow(out, count)
		for range count {
			v, err := r.read(n.items)
			if err != nil {
				return zero, fmt.Errorf("[%d]: %w", len(out), err)
			}
			out = append(out, v)
		}
	}
}

func (r *avroReader[T, V]) mapValue(n *avroNode) (V, error) {
	var zero V
	out := r.build.Map(0)
	for {
		count, err := r.blockCount(n.items)
		if err != nil {
			return zero, err
		}
		if count == 0 {
			return out, nil
		}
		for range count {
			k, err := r.bytes()
			if err != nil {
				return zero, err
			}
			v, err := r.read(n.items)
			if err != nil {
				return zero, fmt.Errorf("[%q]: %w", k, err)
			}
			r.build.Set(out, string(k), v)
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
