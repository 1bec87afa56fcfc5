package serdes

import (
	"errors"
	"fmt"
	"unicode/utf8"
	"unsafe"

	"github.com/stoatflow/stoatflow/pipeline"
)

// String is Kafka's StringSerde (UTF-8). Deserialize produces a Go string; data that is not
// valid UTF-8 decodes as Kafka's StringDeserializer decodes it (new String(data, UTF_8)):
// malformed bytes become U+FFFD by the JDK's rule (decodeJava), so the same bytes give the
// same string in both, and a record never fails on its text. Serialize accepts a string or a
// []byte (sent as is), both required to be valid UTF-8: a Java String cannot hold such
// bytes, so no Kafka Streams application could write them, and a script that builds them
// (string.char(255)) gets an error rather than its bytes changed behind its back (the bytes
// serde sends any bytes). A number is refused rather than formatted, because its text form
// is the script's decision (tostring).
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
// once (boxedString). Malformed bytes become U+FFFD as in Java (decodeJava).
func (String) Deserialize(_ string, _ pipeline.Headers, data []byte) (any, error) {
	if data == nil {
		return nil, nil
	}
	if !utf8.Valid(data) {
		return decodeJava(data), nil
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
