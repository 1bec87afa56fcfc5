package serdes

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// maxExactInt is the largest magnitude up to which a float64 can only have come from that very
// integer (JavaScript's MAX_SAFE_INTEGER). Lua 5.1 numbers are float64, so a larger one may
// already have been rounded: such longs must travel as decimal strings.
const maxExactInt = 1<<53 - 1

// toInt64 converts the values a long or integer serde accepts: Go integers, integral float64
// within ±(2^53−1), and decimal strings (also json.Number).
func toInt64(serde string, v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case float64:
		return floatToInt64(serde, x)
	case string:
		return parseDecimal(serde, x)
	case json.Number:
		return parseDecimal(serde, string(x))
	}
	return 0, cannotSerialize(serde, v)
}

func floatToInt64(serde string, f float64) (int64, error) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return 0, fmt.Errorf("%s serde: cannot serialize %s: not an integer", serde, describe(f))
	case math.Abs(f) > maxExactInt:
		return 0, fmt.Errorf("%s serde: cannot serialize %s: beyond ±2^53 a Lua number may have lost precision; pass the value as a decimal string", serde, describe(f))
	case f != math.Trunc(f):
		return 0, fmt.Errorf("%s serde: cannot serialize %s: not an integer", serde, describe(f))
	}
	return int64(f), nil
}

func parseDecimal(serde, s string) (int64, error) {
	i, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		return i, nil
	}
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%s serde: cannot serialize string %s: outside the 64-bit range", serde, quoteShort(s))
	}
	return 0, fmt.Errorf("%s serde: cannot serialize string %s: not a decimal integer", serde, quoteShort(s))
}

// toFloat64 converts the values a double serde accepts: float64, and integers (also
// json.Number) that a float64 holds exactly.
func toFloat64(serde string, v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case int64:
		return intToFloat64(serde, x)
	case int:
		return intToFloat64(serde, int64(x))
	case int32:
		return float64(x), nil
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return 0, fmt.Errorf("%s serde: cannot serialize %s: not a finite double", serde, describe(x))
		}
		return f, nil
	}
	return 0, cannotSerialize(serde, v)
}

func intToFloat64(serde string, i int64) (float64, error) {
	f := float64(i)
	// float64(MaxInt64) rounds up to 2^63, which int64() cannot convert back.
	if f >= 0x1p63 || int64(f) != i {
		return 0, fmt.Errorf("%s serde: cannot serialize int64 %d: a double cannot hold it exactly", serde, i)
	}
	return f, nil
}
