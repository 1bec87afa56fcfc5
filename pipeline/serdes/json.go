package serdes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/stoatflow/stoatflow/pipeline"
)

// JSON is a UTF-8 JSON text serde, readable and writable by Jackson-based Java serdes. The Go
// value contract, which the Lua runtime follows both ways:
//
//   - object: map[string]any (a nil map serialises as {})
//   - array: []any (a nil slice serialises as []), so an empty Lua table must become []any{}
//     or map[string]any{} according to what it stands for
//   - string: string (valid UTF-8)
//   - number: json.Number on Deserialize, so integers keep 64-bit precision; Serialize also
//     accepts int64, int, int32 and finite float64
//   - true/false: bool
//   - null inside an array or object: Go nil
//
// A top-level nil value is a tombstone: it serialises to nil bytes, not to the text "null";
// likewise the text "null" deserialises to nil, so it leaves the topology as a tombstone.
// Object keys are written in sorted order, so equal values give equal bytes.
type JSON struct{}

// Name returns "json".
func (JSON) Name() string { return "json" }

// Serialize encodes value as JSON text.
func (JSON) Serialize(_ string, _ pipeline.Headers, value any) ([]byte, error) {
	if value == nil {
		return nil, nil
	}
	out, err := appendJSON(make([]byte, 0, 64), value, 0)
	if err != nil {
		return nil, fmt.Errorf("json serde: %w", err)
	}
	return out, nil
}

// Deserialize decodes one JSON value, refusing invalid UTF-8 (as Jackson does) and anything
// after the value other than whitespace.
func (JSON) Deserialize(_ string, _ pipeline.Headers, data []byte) (any, error) {
	if data == nil {
		return nil, nil
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("json serde: data is not valid UTF-8 (first invalid byte at offset %d of %d)", firstInvalidUTF8(data), len(data))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, jsonSyntaxError(err, len(data))
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("json serde: invalid JSON: data continues after the value ending at offset %d", end)
	}
	return v, nil
}

func jsonSyntaxError(err error, size int) error {
	if err == io.EOF {
		return errors.New("json serde: invalid JSON: no value (empty or only whitespace)")
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("json serde: invalid JSON: data ends inside a value (%d bytes)", size)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("json serde: invalid JSON at offset %d: %v", se.Offset, err)
	}
	return fmt.Errorf("json serde: invalid JSON: %v", err)
}
