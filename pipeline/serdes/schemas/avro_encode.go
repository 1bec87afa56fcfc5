package schemas

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

func appendLong(dst []byte, v int64) []byte { return binary.AppendVarint(dst, v) }

// Values reads the values the Avro encoder writes as they are: the package's Go values
// (goValues), or another runtime's, so that it can write its values without converting them
// first (the Lua runtime's tables). Each method judges a value as the Go value it stands for
// would be judged, or returns ErrConvertFirst where it cannot tell.
type Values[V any] interface {
	IsNull(v V) bool
	Bool(v V) (b, ok bool)
	// Int reads an integer as toInt64 does, Float a number as toFloat64 does.
	Int(v V) (int64, error)
	Float(v V) (float64, error)
	// AppendText writes a string or bytes value, length-prefixed.
	AppendText(dst []byte, v V) ([]byte, bool)
	Bytes(v V) ([]byte, bool)
	// Symbol reads a string: an enum symbol's name.
	Symbol(v V) (string, bool)
	// DecimalText is the decimal text of a decimal given as text or a number.
	DecimalText(v V) (string, error)
	// Array is the length of an array (asArray).
	Array(v V) (n int, ok bool, err error)
	Index(v V, i int) V
	// Fields is the number of entries of a record or map (asMap).
	Fields(v V) (n int, ok bool, err error)
	Field(v V, key string) (V, bool)
	Keys(v V) ([]string, error)
	// OneKey is the entry of a map holding exactly one (the union branch form).
	OneKey(v V) (string, V, bool)
	Describe(v V) string
}

// ErrConvertFirst is what a Values returns for a value it cannot judge as its Go value would
// be: the encoder gives up at once, and the caller writes the Go value instead.
var ErrConvertFirst = errors.New("the value needs converting to Go values first")

// goValues reads the package's Go values.
type goValues struct{}

func (goValues) IsNull(v any) bool                           { return v == nil }
func (goValues) Bool(v any) (bool, bool)                     { b, ok := v.(bool); return b, ok }
func (goValues) Int(v any) (int64, error)                    { return toInt64(v) }
func (goValues) Float(v any) (float64, error)                { return toFloat64(v) }
func (goValues) AppendText(dst []byte, v any) ([]byte, bool) { return appendString(dst, v) }
func (goValues) Bytes(v any) ([]byte, bool)                  { return toBytes(v) }
func (goValues) Symbol(v any) (string, bool)                 { s, ok := v.(string); return s, ok }
func (goValues) Describe(v any) string                       { return describe(v) }
func (goValues) Index(v any, i int) any                      { items, _ := asArray(v); return items[i] }

func (goValues) DecimalText(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	}
	i, err := toInt64(v)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(i, 10), nil
}

func (goValues) Array(v any) (int, bool, error) {
	items, ok := asArray(v)
	return len(items), ok, nil
}

func (goValues) Fields(v any) (int, bool, error) {
	m, ok := asMap(v)
	return len(m), ok, nil
}

func (goValues) Field(v any, key string) (any, bool) {
	m, _ := asMap(v)
	e, ok := m[key]
	return e, ok
}

func (goValues) Keys(v any) ([]string, error) {
	m, _ := asMap(v)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys, nil
}

func (goValues) OneKey(v any) (string, any, bool) {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for k, e := range m {
			return k, e, true
		}
	}
	return "", nil, false
}

// AvroSchema is a compiled Avro schema, for another runtime's values to be written with
// AppendAvro.
type AvroSchema struct{ root *avroNode }

// IsRecord reports whether values of s are records (whose Build makes the record first).
func (s AvroSchema) IsRecord() bool { return s.root != nil && s.root.kind == avroRecord }

// NumFields is the number of fields of a record schema; Build sets every one.
func (s AvroSchema) NumFields() int { return len(s.root.fields) }

// HasField reports whether a record schema has a field named name.
func (s AvroSchema) HasField(name string) bool {
	_, ok := s.root.fieldIndex[name]
	return ok
}

// maxForeignDepth bounds how deep AppendAvro follows another runtime's values, which may hold
// themselves; deeper ones are converted first, which refuses them as the runtime does.
const maxForeignDepth = 90

// AppendAvro appends v written with s, read through vals.
func AppendAvro[V any](dst []byte, s AvroSchema, v V, vals Values[V]) ([]byte, error) {
	w := avroWriter[V]{vals: vals, maxDepth: maxForeignDepth}
	return w.write(dst, s.root, v)
}

// avroWriter writes values read through vals, records, arrays and maps nested at most
// maxDepth deep.
type avroWriter[V any] struct {
	vals     Values[V]
	depth    int
	maxDepth int
}

// enter counts one more level of nesting.
func (w *avroWriter[V]) enter() error {
	if w.depth++; w.depth > w.maxDepth {
		return ErrConvertFirst
	}
	return nil
}

// appendString writes a length-prefixed string or bytes value.
func appendString(dst []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case string:
		return append(appendLong(dst, int64(len(x))), x...), true
	case []byte:
		return append(appendLong(dst, int64(len(x))), x...), true
	}
	return dst, false
}

// avroEncode appends the Go value v encoded with n. Errors name the path to the failing value.
func avroEncode(dst []byte, n *avroNode, v any) ([]byte, error) {
	w := avroWriter[any]{vals: goValues{}, maxDepth: math.MaxInt}
	return w.write(dst, n, v)
}

func (w *avroWriter[V]) write(dst []byte, n *avroNode, v V) ([]byte, error) {
	vals := w.vals
	switch n.kind {
	case avroNull:
		if !vals.IsNull(v) {
			return dst, fmt.Errorf("cannot write %s as null", vals.Describe(v))
		}
		return dst, nil
	case avroBoolean:
		b, ok := vals.Bool(v)
		if !ok {
			return dst, fmt.Errorf("cannot write %s as boolean", vals.Describe(v))
		}
		if b {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case avroInt:
		i, err := vals.Int(v)
		if err == nil && (i < math.MinInt32 || i > math.MaxInt32) {
			err = fmt.Errorf("%d is out of 32-bit range", i)
		}
		if err != nil {
			return dst, fmt.Errorf("cannot write as int: %w", err)
		}
		return appendLong(dst, i), nil
	case avroLong:
		i, err := vals.Int(v)
		if err != nil {
			return dst, fmt.Errorf("cannot write as long: %w", err)
		}
		return appendLong(dst, i), nil
	case avroFloat:
		f, err := vals.Float(v)
		if err != nil {
			return dst, fmt.Errorf("cannot write as float: %w", err)
		}
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f))), nil
	case avroDouble:
		f, err := vals.Float(v)
		if err != nil {
			return dst, fmt.Errorf("cannot write as double: %w", err)
		}
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
	case avroBytes, avroString:
		out, ok := vals.AppendText(dst, v)
		if !ok {
			return dst, fmt.Errorf("cannot write %s as %s", vals.Describe(v), n.name)
		}
		return out, nil
	case avroRecord:
		return w.record(dst, n, v)
	case avroEnum:
		s, ok := vals.Symbol(v)
		if !ok {
			return dst, fmt.Errorf("cannot write %s as enum %s (give a symbol's name)", vals.Describe(v), n.name)
		}
		i, ok := n.symbolIndex[s]
		if !ok {
			return dst, fmt.Errorf("enum %s has no symbol %q (symbols: %s)", n.name, s, strings.Join(n.symbols, ", "))
		}
		return appendLong(dst, int64(i)), nil
	case avroArray:
		count, ok, err := vals.Array(v)
		if err != nil {
			return dst, err
		}
		if !ok {
			return dst, fmt.Errorf("cannot write %s as array", vals.Describe(v))
		}
		if err := w.enter(); err != nil {
			return dst, err
		}
		defer func() { w.depth-- }()
		if count > 0 {
			dst = appendLong(dst, int64(count))
			for i := range count {
				var err error
				if dst, err = w.write(dst, n.items, vals.Index(v, i)); err != nil {
					return dst, fmt.Errorf("[%d]: %w", i+1, err)
				}
			}
		}
		return append(dst, 0), nil
	case avroMap:
		return w.mapValue(dst, n, v)
	case avroUnion:
		return w.union(dst, n, v)
	case avroFixed:
		b, ok := vals.Bytes(v)
		if !ok || len(b) != n.size {
			return dst, fmt.Errorf("cannot write %s as fixed %s of %d bytes", vals.Describe(v), n.name, n.size)
		}
		return append(dst, b...), nil
	case avroDecimalBytes, avroDecimalFixed:
		text, err := vals.DecimalText(v)
		if errors.Is(err, ErrConvertFirst) {
			return dst, err
		}
		if err != nil {
			return dst, fmt.Errorf("cannot write %s as decimal (give its decimal text, e.g. \"12.50\")", vals.Describe(v))
		}
		return avroEncodeDecimal(dst, n, text)
	}
	return dst, fmt.Errorf("unknown Avro node kind %d", n.kind)
}

func (w *avroWriter[V]) record(dst []byte, n *avroNode, v V) ([]byte, error) {
	vals := w.vals
	count, ok, err := vals.Fields(v)
	if err != nil {
		return dst, err
	}
	if !ok {
		return dst, fmt.Errorf("cannot write %s as record %s", vals.Describe(v), n.name)
	}
	if err := w.enter(); err != nil {
		return dst, err
	}
	defer func() { w.depth-- }()
	found := 0
	for i := range n.fields {
		f := &n.fields[i]
		fv, ok := vals.Field(v, f.name)
		var err error
		switch {
		case ok:
			found++
			dst, err = w.write(dst, f.node, fv)
		case f.def != nil:
			dst = append(dst, f.def...)
		case acceptsNull(f.node):
			// A Lua table cannot hold nil: an absent field is null where null is allowed.
			dst, err = avroEncode(dst, f.node, nil)
		default:
			err = errors.New("missing (the field has no default and is not nullable)")
		}
		if err != nil {
			return dst, fmt.Errorf("field %s: %w", f.name, err)
		}
	}
	if found < count {
		keys, err := vals.Keys(v)
		if err != nil {
			return dst, err
		}
		var unknown []string
		for _, k := range keys {
			if _, ok := n.fieldIndex[k]; !ok {
				unknown = append(unknown, k)
			}
		}
		slices.Sort(unknown)
		return dst, fmt.Errorf("record %s has no field %s", n.name, strings.Join(unknown, ", "))
	}
	return dst, nil
}

func acceptsNull(n *avroNode) bool {
	return n.kind == avroNull || (n.kind == avroUnion && n.nullBranch >= 0)
}

// mapValue writes a map in key order, so that equal maps give equal bytes (keys and
// changelogs compare bytes).
func (w *avroWriter[V]) mapValue(dst []byte, n *avroNode, v V) ([]byte, error) {
	vals := w.vals
	count, ok, err := vals.Fields(v)
	if err != nil {
		return dst, err
	}
	if !ok {
		return dst, fmt.Errorf("cannot write %s as map", vals.Describe(v))
	}
	if err := w.enter(); err != nil {
		return dst, err
	}
	defer func() { w.depth-- }()
	if count > 0 {
		keys, err := vals.Keys(v)
		if err != nil {
			return dst, err
		}
		slices.Sort(keys)
		dst = appendLong(dst, int64(len(keys)))
		for _, k := range keys {
			dst = append(appendLong(dst, int64(len(k))), k...)
			e, _ := vals.Field(v, k)
			if dst, err = w.write(dst, n.items, e); err != nil {
				return dst, fmt.Errorf("[%q]: %w", k, err)
			}
		}
	}
	return append(dst, 0), nil
}

// union picks the branch: null for nil; the branch a one-key table names
// ({["com.acme.Card"] = {...}}, Avro's JSON form); else the first branch that takes the value.
func (w *avroWriter[V]) union(dst []byte, n *avroNode, v V) ([]byte, error) {
	vals := w.vals
	if vals.IsNull(v) {
		if n.nullBranch < 0 {
			return dst, errors.New("cannot write null: the union has no null branch")
		}
		return appendLong(dst, int64(n.nullBranch)), nil
	}
	if k, inner, ok := vals.OneKey(v); ok {
		if i, ok := n.branchIndex[k]; ok {
			out, err := w.write(appendLong(dst, int64(i)), n.branches[i], inner)
			if err != nil {
				return dst, fmt.Errorf("branch %s: %w", n.branches[i].name, err)
			}
			return out, nil
		}
	}
	var first error
	for i, b := range n.branches {
		if i == n.nullBranch {
			continue
		}
		mark := len(dst)
		out, err := w.write(appendLong(dst, int64(i)), b, v)
		if err == nil {
			return out, nil
		}
		if errors.Is(err, ErrConvertFirst) {
			// Another branch taking the value might not be the one its Go value takes.
			return dst, err
		}
		dst = dst[:mark]
		if first == nil {
			first = fmt.Errorf("branch %s: %w", b.name, err)
		}
	}
	if first == nil {
		return dst, fmt.Errorf("cannot write %s: the union has only a null branch", vals.Describe(v))
	}
	if nonNull := len(n.branches) - min(1, n.nullBranch+1); nonNull > 1 {
		return dst, fmt.Errorf("no branch of the union takes %s (first: %w)", vals.Describe(v), first)
	}
	return dst, first
}

var bigTen = big.NewInt(10)

// avroEncodeDecimal writes a decimal given as its decimal text, refusing digits beyond the
// scale rather than rounding them away.
func avroEncodeDecimal(dst []byte, n *avroNode, text string) ([]byte, error) {
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return dst, fmt.Errorf("%q is not a decimal number", text)
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(bigTen, big.NewInt(int64(n.scale)), nil)))
	if !r.IsInt() {
		return dst, fmt.Errorf("%s has more than the %d decimal places of the schema", text, n.scale)
	}
	u := r.Num()
	if n.precision > 0 && len(new(big.Int).Abs(u).String()) > n.precision {
		return dst, fmt.Errorf("%s has more than the %d digits of the schema", text, n.precision)
	}
	b := twosComplement(u)
	if n.kind == avroDecimalFixed {
		if len(b) > n.size {
			return dst, fmt.Errorf("%s does not fit in %d bytes", text, n.size)
		}
		pad := byte(0)
		if u.Sign() < 0 {
			pad = 0xff
		}
		for range n.size - len(b) {
			dst = append(dst, pad)
		}
		return append(dst, b...), nil
	}
	return append(appendLong(dst, int64(len(b))), b...), nil
}

// twosComplement is the shortest big-endian two's-complement form of u.
func twosComplement(u *big.Int) []byte {
	if u.Sign() >= 0 {
		b := u.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -u - 1, bitwise inverted, is u's two's complement.
	m := new(big.Int).Neg(u)
	m.Sub(m, big.NewInt(1))
	b := m.Bytes()
	for i := range b {
		b[i] = ^b[i]
	}
	if len(b) == 0 || b[0]&0x80 == 0 {
		b = append([]byte{0xff}, b...)
	}
	return b
}
