package serdes

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxJSONDepth matches encoding/json's decoding limit, so whatever Deserialize produces can be
// serialised again; deeper values (a cyclic table, say) are refused instead of recursing forever.
const maxJSONDepth = 10000

// encodeError locates a value Serialize refused. path holds the steps from the value up to
// the root, in that order, because it is filled while the recursion unwinds.
type encodeError struct {
	msg  string
	path []string
}

func (e *encodeError) Error() string {
	var b strings.Builder
	b.WriteString(e.msg)
	b.WriteString(" at $")
	shown := 0
	for i := len(e.path) - 1; i >= 0; i-- {
		// A cycle's path is thousands of steps long; its root end is what locates it.
		if shown == maxPathSteps {
			b.WriteString("...")
			break
		}
		b.WriteString(e.path[i])
		shown++
	}
	return b.String()
}

// maxPathSteps bounds the path an error message shows.
const maxPathSteps = 16

func refuse(format string, args ...any) error {
	return &encodeError{msg: fmt.Sprintf(format, args...)}
}

// within adds one path step to an error coming up from a nested value.
func within(err error, step string) error {
	if e, ok := err.(*encodeError); ok {
		e.path = append(e.path, step)
	}
	return err
}

func keyStep(k string) string {
	for i, r := range k {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (i == 0 || r < '0' || r > '9') {
			return "[" + strconv.Quote(k) + "]"
		}
	}
	if k == "" {
		return `[""]`
	}
	return "." + k
}

func appendJSON(b []byte, v any, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return appendJSONString(b, x)
	case json.Number:
		if !isJSONNumber(string(x)) {
			return b, refuse("json.Number %s is not a JSON number", quoteShort(string(x)))
		}
		return append(b, x...), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case float64:
		return appendJSONFloat(b, x)
	case map[string]any:
		return appendJSONObject(b, x, depth+1)
	case []any:
		return appendJSONArray(b, x, depth+1)
	}
	return b, refuse("cannot serialize %s", describe(v))
}

func appendJSONObject(b []byte, m map[string]any, depth int) ([]byte, error) {
	if depth > maxJSONDepth {
		return b, refuse("nesting deeper than %d levels (a cycle?)", maxJSONDepth)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendJSONString(b, k); err != nil {
			return b, refuse("object key %s is not valid UTF-8", quoteShort(k))
		}
		b = append(b, ':')
		if b, err = appendJSON(b, m[k], depth); err != nil {
			return b, within(err, keyStep(k))
		}
	}
	return append(b, '}'), nil
}

func appendJSONArray(b []byte, a []any, depth int) ([]byte, error) {
	if depth > maxJSONDepth {
		return b, refuse("nesting deeper than %d levels (a cycle?)", maxJSONDepth)
	}
	b = append(b, '[')
	var err error
	for i, e := range a {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendJSON(b, e, depth); err != nil {
			return b, within(err, "["+strconv.Itoa(i)+"]")
		}
	}
	return append(b, ']'), nil
}

// appendJSONFloat writes integral values without a fraction (Lua hands every number over as a
// float64, and a count of 3 should read 3) and switches to exponent form where JavaScript does.
func appendJSONFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, refuse("cannot serialize %s: JSON has no NaN or infinity", describe(f))
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, f, format, -1, 64), nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s, escaping only what JSON requires; non-ASCII text is written as
// UTF-8, as Jackson does.
func appendJSONString(b []byte, s string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return b, refuse("string %s is not valid UTF-8", quoteShort(s))
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"'), nil
}

// isJSONNumber checks RFC 8259's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = skipDigits(s, i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := skipDigits(s, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := skipDigits(s, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}

func skipDigits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
