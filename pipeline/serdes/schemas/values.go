package schemas

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// maxQuoted bounds how much of a string an error message repeats.
const maxQuoted = 40

// describe names a value in an error message: its kind, and for scalars its value.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) > maxQuoted {
			return "string " + strconv.Quote(x[:maxQuoted]) + "..."
		}
		return "string " + strconv.Quote(x)
	case []byte:
		return fmt.Sprintf("%d bytes", len(x))
	case map[string]any:
		return "table (record or map)"
	case []any:
		return "array"
	case bool, int, int32, int64, uint64, float64, json.Number:
		return fmt.Sprintf("number or boolean %v", x)
	}
	return fmt.Sprintf("%T", v)
}

// toInt64 reads an integer: a Go integer, an integral float64, a json.Number, or a decimal
// string (the form 64-bit integers beyond 2^53 take in Lua).
func toInt64(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), nil
		}
	case float64:
		if x == math.Trunc(x) && x >= -(1<<63) && x < 1<<63 {
			return int64(x), nil
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
	case string:
		if i, err := strconv.ParseInt(x, 10, 64); err == nil {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s is not a 64-bit integer", describe(v))
}

// toUint64 reads an unsigned integer as toInt64 reads a signed one.
func toUint64(v any) (uint64, error) {
	switch x := v.(type) {
	case uint64:
		return x, nil
	case string:
		if u, err := strconv.ParseUint(x, 10, 64); err == nil {
			return u, nil
		}
	case json.Number:
		if u, err := strconv.ParseUint(string(x), 10, 64); err == nil {
			return u, nil
		}
	case float64:
		if x == math.Trunc(x) && x >= 0 && x < 1<<64 {
			return uint64(x), nil
		}
	}
	i, err := toInt64(v)
	if err != nil || i < 0 {
		return 0, fmt.Errorf("%s is not an unsigned 64-bit integer", describe(v))
	}
	return uint64(i), nil
}

// toInt32 reads an integer in 32-bit range.
func toInt32(v any) (int32, error) {
	i, err := toInt64(v)
	if err != nil {
		return 0, err
	}
	if i < math.MinInt32 || i > math.MaxInt32 {
		return 0, fmt.Errorf("%d is out of 32-bit range", i)
	}
	return int32(i), nil
}

// toFloat64 reads a number.
func toFloat64(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case int64:
		return float64(x), nil
	case int:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f, nil
		}
	}
	return 0, fmt.Errorf("%s is not a number", describe(v))
}

// toBytes reads bytes: a string (how Lua holds bytes) or a []byte.
func toBytes(v any) ([]byte, bool) {
	switch x := v.(type) {
	case string:
		return []byte(x), true
	case []byte:
		return x, true
	}
	return nil, false
}

// asArray reads an array; an empty table is an empty array whatever its Lua kind.
func asArray(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case map[string]any:
		if len(x) == 0 {
			return nil, true
		}
	}
	return nil, false
}

// asMap reads a map or record; an empty table is an empty map whatever its Lua kind.
func asMap(v any) (map[string]any, bool) {
	switch x := v.(type) {
	case map[string]any:
		return x, true
	case []any:
		if len(x) == 0 {
			return map[string]any{}, true
		}
	}
	return nil, false
}
