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

// avroEncode appends v encoded with n. Errors name the path to the failing value.
func avroEncode(dst []byte, n *avroNode, v any) ([]byte, error) {
	switch n.kind {
	case avroNull:
		if v != nil {
			return dst, fmt.Errorf("cannot write %s as null", describe(v))
		}
		return dst, nil
	case avroBoolean:
		b, ok := v.(bool)
		if !ok {
			return dst, fmt.Errorf("cannot write %s as boolean", describe(v))
		}
		if b {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case avroInt:
		i, err := toInt32(v)
		if err != nil {
			return dst, fmt.Errorf("cannot write as int: %w", err)
		}
		return appendLong(dst, int64(i)), nil
	case avroLong:
		i, err := toInt64(v)
		if err != nil {
			return dst, fmt.Errorf("cannot write as long: %w", err)
		}
		return appendLong(dst, i), nil
	case avroFloat:
		f, err := toFloat64(v)
		if err != nil {
			return dst, fmt.Errorf("cannot write as float: %w", err)
		}
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f))), nil
	case avroDouble:
		f, err := toFloat64(v)
		if err != nil {
			return dst, fmt.Errorf("cannot write as double: %w", err)
		}
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
	case avroBytes, avroString:
		out, ok := appendString(dst, v)
		if !ok {
			return dst, fmt.Errorf("cannot write %s as %s", describe(v), n.name)
		}
		return out, nil
	case avroRecord:
		return avroEncodeRecord(dst, n, v)
	case avroEnum:
		s, ok := v.(string)
		if !ok {
			return dst, fmt.Errorf("cannot write %s as enum %s (give a symbol's name)", describe(v), n.name)
		}
		i, ok := n.symbolIndex[s]
		if !ok {
			return dst, fmt.Errorf("enum %s has no symbol %q (symbols: %s)", n.name, s, strings.Join(n.symbols, ", "))
		}
		return appendLong(dst, int64(i)), nil
	case avroArray:
		items, ok := asArray(v)
		if !ok {
			return dst, fmt.Errorf("cannot write %s as array", describe(v))
		}
		if len(items) > 0 {
			dst = appendLong(dst, int64(len(items)))
			for i, e := range items {
				var err error
				if dst, err = avroEncode(dst, n.items, e); err != nil {
					return dst, fmt.Errorf("[%d]: %w", i+1, err)
				}
			}
		}
		return append(dst, 0), nil
	case avroMap:
		return avroEncodeMap(dst, n, v)
	case avroUnion:
		return avroEncodeUnion(dst, n, v)
	case avroFixed:
		b, ok := toBytes(v)
		if !ok || len(b) != n.size {
			return dst, fmt.Errorf("cannot write %s as fixed %s of %d bytes", describe(v), n.name, n.size)
		}
		return append(dst, b...), nil
	case avroDecimalBytes, avroDecimalFixed:
		return avroEncodeDecimal(dst, n, v)
	}
	return dst, fmt.Errorf("unknown Avro node kind %d", n.kind)
}

func avroEncodeRecord(dst []byte, n *avroNode, v any) ([]byte, error) {
	m, ok := asMap(v)
	if !ok {
		return dst, fmt.Errorf("cannot write %s as record %s", describe(v), n.name)
	}
	found := 0
	for i := range n.fields {
		f := &n.fields[i]
		fv, ok := m[f.name]
		var err error
		switch {
		case ok:
			found++
			dst, err = avroEncode(dst, f.node, fv)
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
	if found < len(m) {
		var unknown []string
		for k := range m {
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

// avroEncodeMap writes a map in key order, so that equal maps give equal bytes (keys and
// changelogs compare bytes).
func avroEncodeMap(dst []byte, n *avroNode, v any) ([]byte, error) {
	m, ok := asMap(v)
	if !ok {
		return dst, fmt.Errorf("cannot write %s as map", describe(v))
	}
	if len(m) > 0 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = appendLong(dst, int64(len(keys)))
		for _, k := range keys {
			dst, _ = appendString(dst, k)
			var err error
			if dst, err = avroEncode(dst, n.items, m[k]); err != nil {
				return dst, fmt.Errorf("[%q]: %w", k, err)
			}
		}
	}
	return append(dst, 0), nil
}

// avroEncodeUnion picks the branch: null for nil; the branch a one-key table names
// ({["com.acme.Card"] = {...}}, Avro's JSON form); else the first branch that takes the value.
func avroEncodeUnion(dst []byte, n *avroNode, v any) ([]byte, error) {
	if v == nil {
		if n.nullBranch < 0 {
			return dst, errors.New("cannot write null: the union has no null branch")
		}
		return appendLong(dst, int64(n.nullBranch)), nil
	}
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for k, inner := range m {
			if i, ok := n.branchIndex[k]; ok {
				out, err := avroEncode(appendLong(dst, int64(i)), n.branches[i], inner)
				if err != nil {
					return dst, fmt.Errorf("branch %s: %w", n.branches[i].name, err)
				}
				return out, nil
			}
		}
	}
	var first error
	for i, b := range n.branches {
		if i == n.nullBranch {
			continue
		}
		mark := len(dst)
		out, err := avroEncode(appendLong(dst, int64(i)), b, v)
		if err == nil {
			return out, nil
		}
		dst = dst[:mark]
		if first == nil {
			first = fmt.Errorf("branch %s: %w", b.name, err)
		}
	}
	if first == nil {
		return dst, fmt.Errorf("cannot write %s: the union has only a null branch", describe(v))
	}
	if nonNull := len(n.branches) - min(1, n.nullBranch+1); nonNull > 1 {
		return dst, fmt.Errorf("no branch of the union takes %s (first: %w)", describe(v), first)
	}
	return dst, first
}

var bigTen = big.NewInt(10)

// avroEncodeDecimal writes a decimal given as its decimal text or a number, refusing digits
// beyond the scale rather than rounding them away.
func avroEncodeDecimal(dst []byte, n *avroNode, v any) ([]byte, error) {
	var text string
	switch x := v.(type) {
	case string:
		text = x
	case float64:
		text = strconv.FormatFloat(x, 'f', -1, 64)
	default:
		i, err := toInt64(v)
		if err != nil {
			return dst, fmt.Errorf("cannot write %s as decimal (give its decimal text, e.g. \"12.50\")", describe(v))
		}
		text = strconv.FormatInt(i, 10)
	}
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
