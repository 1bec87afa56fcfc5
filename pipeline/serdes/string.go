package serdes

import (
	"errors"
	"fmt"
	"unicode/utf8"
	"unsafe"

	"github.com/stoatflow/stoatflow/pipeline"
)

// String is Kafka's StringSerde (UTF-8). Deserialize produces a Go string; data that is not
// valid UTF-8 is an error, so the deserialization exception handler decides its fate rather
// than a silent replacement character. Serialize accepts a string or a []byte (sent as is),
// both required to be valid UTF-8; a number is refused rather than formatted, because its
// text form is the script's decision (tostring).
type String struct{}

// Name returns "string".
func (String) Name() string { return "string" }

// Canonical implements pipeline.CanonicalSerde.
func (String) Canonical() {}

// Serialize encodes value as UTF-8 bytes.
func (String) Serialize(_ string, _ pipeline.Headers, value any) ([]byte, error) {
	switch v := value.(type) {
	case nil:
		return nil, nil
	case string:
		if !utf8.ValidString(v) {
			return nil, errInvalidUTF8Value
		}
		return stringBytes(v), nil
	case []byte:
		if !utf8.Valid(v) {
			return nil, errInvalidUTF8Value
		}
		return v, nil
	}
	if isNumber(value) {
		return nil, fmt.Errorf("string serde: cannot serialize a number (%s); convert it with tostring", describe(value))
	}
	return nil, cannotSerialize("string", value)
}

// stringBytes is the memory of s as a byte slice, without a copy. Callers of Serialize never
// write into what it returns (pipeline.Serde), so the string stays as immutable as Go
// requires. An empty string gives empty bytes, not nil: nil would be a null.
func stringBytes(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

var errInvalidUTF8Value = errors.New("string serde: cannot serialize a string that is not valid UTF-8 (use the bytes serde)")

// Deserialize decodes UTF-8 bytes into a string; up to maxBoxedString bytes it allocates
// once (boxedString).
func (String) Deserialize(_ string, _ pipeline.Headers, data []byte) (any, error) {
	if data == nil {
		return nil, nil
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("string serde: data is not valid UTF-8 (first invalid byte at offset %d of %d)", firstInvalidUTF8(data), len(data))
	}
	return boxedString(data), nil
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}
