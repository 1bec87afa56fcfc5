package serdes

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// maxQuoted bounds how much of a string value an error message repeats.
const maxQuoted = 40

// describe names a value in an error message: its type, and for scalars its value.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return "string " + quoteShort(x)
	case json.Number:
		return "json.Number " + string(x)
	case float64:
		return "float64 " + strconv.FormatFloat(x, 'g', -1, 64)
	case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32:
		return fmt.Sprintf("%T %v", x, x)
	}
	return fmt.Sprintf("%T", v)
}

func quoteShort(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(s[:maxQuoted]) + "..."
	}
	return strconv.Quote(s)
}

func cannotSerialize(serde string, v any) error {
	return fmt.Errorf("%s serde: cannot serialize %s", serde, describe(v))
}

// isNumber reports whether v is a Go number, for serdes that refuse to turn numbers into text.
func isNumber(v any) bool {
	switch v.(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, json.Number:
		return true
	}
	return false
}
