package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// convert checks a TOML value against the key's type and returns it as the Go
// value the rest of the package uses: string, int64, bool, time.Duration or
// []string. The error message names the value and what is allowed; the caller
// adds the file and key. text is the value as the file writes it, for a number, a
// boolean or a date-time ("" for others and for defaults): errors show it, since the
// decoded value may print otherwise (the float 2.0 as 2, the integer 0x40 as 64).
func convert(k *Key, raw any, text string) (any, error) {
	shown := valueText(k, raw, text)
	switch k.Type {
	case TypeString:
		s, ok := raw.(string)
		if !ok {
			return nil, fmt.Errorf("invalid value %s: expected a string", shown)
		}
		return s, nil
	case TypeInt, TypeLong:
		return convertInt(k, raw, shown)
	case TypeBool:
		b, err := convertBool(raw, shown)
		if err != nil {
			return nil, err
		}
		if reason, ok := lookupMapFold(k.Refuse, strconv.FormatBool(b)); ok {
			return nil, refusal(strconv.FormatBool(b), reason)
		}
		return b, nil
	case TypeDuration:
		return convertDuration(k, raw, shown)
	case TypeList:
		return convertList(k, raw, shown)
	case TypeEnum, TypeClass:
		return convertEnum(k, raw, shown)
	}
	return nil, fmt.Errorf("key type %v has no converter", k.Type)
}

// show prints a value the way it would be written in TOML.
func show(raw any) string {
	if s, ok := raw.(string); ok {
		return strconv.Quote(s)
	}
	if f, ok := raw.(float64); ok {
		return showFloat(f)
	}
	if l, ok := raw.([]any); ok {
		parts := make([]string, len(l))
		for i, e := range l {
			parts[i] = show(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(raw)
}

// showFloat prints a float as TOML writes one, with a fraction or an exponent: Go's 2
// would read as an integer.
func showFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

func convertInt(k *Key, raw any, shown string) (any, error) {
	var n int64
	switch v := raw.(type) {
	case int64:
		n = v
	case string:
		// Java properties are all strings; "100" means 100 there.
		p, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("invalid value %s: expected an integer", shown)
		}
		n = p
	default:
		return nil, fmt.Errorf("invalid value %s: expected an integer", shown)
	}
	if k.Type == TypeInt && (n > math.MaxInt32 || n < math.MinInt32) {
		return nil, fmt.Errorf("invalid value %s: out of the range of a 32-bit integer", shown)
	}
	if n < k.Min {
		return nil, fmt.Errorf("invalid value %s: must be at least %d", shown, k.Min)
	}
	if k.Max != 0 && n > k.Max {
		return nil, tooLarge(k, shown, strconv.FormatInt(k.Max, 10))
	}
	return n, nil
}

func convertBool(raw any, shown string) (bool, error) {
	switch v := raw.(type) {
	case bool:
		return v, nil
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, fmt.Errorf("invalid value %s: expected true or false", shown)
}

const maxDurationMS = math.MaxInt64 / int64(time.Millisecond)

func convertDuration(k *Key, raw any, shown string) (any, error) {
	bad := fmt.Errorf(`invalid value %s: expected milliseconds (integer) or a duration like "10s"`, shown)
	var d time.Duration
	switch v := raw.(type) {
	case int64:
		if v > maxDurationMS || v < -maxDurationMS {
			return nil, fmt.Errorf("invalid value %s: too large", shown)
		}
		d = time.Duration(v) * time.Millisecond
	case string:
		s := strings.TrimSpace(v)
		if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
			if ms > maxDurationMS || ms < -maxDurationMS {
				return nil, fmt.Errorf("invalid value %s: too large", shown)
			}
			d = time.Duration(ms) * time.Millisecond
			break
		}
		p, err := time.ParseDuration(s)
		if err != nil {
			return nil, bad
		}
		d = p
	default:
		return nil, bad
	}
	if k.Min < 0 {
		// -1 is Kafka's "never" or "unbounded"; no other negative value means anything.
		if d < 0 && d != -time.Millisecond {
			return nil, fmt.Errorf("invalid value %s: must be -1 or at least 0", shown)
		}
	} else if min := time.Duration(k.Min) * time.Millisecond; d < min {
		return nil, fmt.Errorf("invalid value %s: must be at least %v", shown, min)
	}
	if k.Max != 0 && d > time.Duration(k.Max)*time.Millisecond {
		return nil, tooLarge(k, shown, strconv.FormatInt(k.Max, 10)+" ms")
	}
	return d, nil
}

// tooLarge is the error of a value above Key.Max.
func tooLarge(k *Key, value, max string) error {
	return fmt.Errorf("invalid value %s: must be at most %s (%s)", value, max, k.MaxReason)
}

func convertList(k *Key, raw any, shown string) (any, error) {
	var items []string
	switch v := raw.(type) {
	case string:
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				items = append(items, part)
			}
		}
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("invalid value %s: expected a list of strings", shown)
			}
			items = append(items, s)
		}
	default:
		return nil, fmt.Errorf("invalid value %s: expected a list of strings or a comma-separated string", shown)
	}
	if len(k.Allowed) > 0 {
		for i, item := range items {
			canon, ok := lookupFold(k.Allowed, item)
			if !ok {
				return nil, fmt.Errorf("invalid value %s: allowed values are %s", show(item), quoteAll(k.Allowed))
			}
			items[i] = canon
		}
	}
	return items, nil
}

func convertEnum(k *Key, raw any, shown string) (any, error) {
	var s string
	switch v := raw.(type) {
	case string:
		s = strings.TrimSpace(v)
	case int64:
		s = strconv.FormatInt(v, 10) // acks = 1
	default:
		return nil, fmt.Errorf("invalid value %s: allowed values are %s", shown, quoteAll(k.Allowed))
	}
	if reason, ok := lookupMapFold(k.Refuse, s); ok {
		return nil, refusal(s, reason)
	}
	if canon, ok := lookupFold(k.Allowed, s); ok {
		return canon, nil
	}
	if canon, ok := lookupMapFold(k.Aliases, s); ok {
		return canon, nil
	}
	return nil, fmt.Errorf("invalid value %s: allowed values are %s", shown, quoteAll(k.Allowed))
}

// refusedValue is the error of a value in Key.Refuse.
type refusedValue struct {
	kind Kind // KindRefused or KindUnsupported
	msg  string
}

func (e *refusedValue) Error() string { return e.msg }

// refusal words a refused value; reasons that already say "not supported yet"
// stand alone.
func refusal(value, reason string) error {
	if strings.HasPrefix(reason, "not supported yet") {
		return &refusedValue{KindUnsupported, reason}
	}
	return &refusedValue{KindRefused, fmt.Sprintf("value %s refused: %s", strconv.Quote(value), reason)}
}

// kindOf is the kind of a convert error: a refused value's, else KindInvalid.
func kindOf(err error) Kind {
	var r *refusedValue
	if errors.As(err, &r) {
		return r.kind
	}
	return KindInvalid
}

func lookupFold(list []string, s string) (string, bool) {
	for _, a := range list {
		if strings.EqualFold(a, s) {
			return a, true
		}
	}
	return "", false
}

func lookupMapFold(m map[string]string, s string) (string, bool) {
	for k, v := range m {
		if strings.EqualFold(k, s) {
			return v, true
		}
	}
	return "", false
}

func quoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}
