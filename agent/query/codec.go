package query

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// fieldCodec converts one side of a store (keys or values) between the forms of the HTTP
// API and the bytes in the store, through the store's serde. Keys in paths and parameters
// are text: the string itself, a decimal number, JSON text, or base64 for bytes. Values come
// back as JSON: the JSON value, a number, a string, or base64 for bytes.
//
// Serdes written in Lua (stoat.serde{...}) run on the processing goroutine's Lua state,
// which interactive queries must not touch; their data is shown and taken as base64 of the
// serialised bytes. The Schema Registry serdes (avro, protobuf, json-schema) are safe for
// concurrent use: their records are shown and taken as JSON, like the json serde's.
// kindSchema is the kind of the Schema Registry serdes.
const kindSchema = "schema-registry"

type fieldCodec struct {
	serde pipeline.Serde
	kind  string // the built-in serde's name; "" for a serde written in Lua
	topic string // what the serde is given as topic: the changelog, as in Kafka Streams
}

func newFieldCodec(s pipeline.Serde, topic string) fieldCodec {
	c := fieldCodec{serde: s, topic: topic}
	if s == nil {
		return c
	}
	if b, err := serdes.ByName(s.Name()); err == nil && b == s {
		c.kind = s.Name()
	}
	if _, ok := s.(*schemas.Serde); ok {
		c.kind = kindSchema
	}
	return c
}

// parse turns the text form of a key into its serialised bytes; headers reach the
// serialiser (KIP-1321).
func (c fieldCodec) parse(text string, headers pipeline.Headers) ([]byte, error) {
	var v any
	switch c.kind {
	case "", "bytes":
		return decodeBase64(text)
	case "string", "long", "integer":
		v = text
	case "double":
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, fmt.Errorf("%s is not a number (the key serde is double)", quoted(text))
		}
		v = f
	case "json", kindSchema:
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s is not JSON text (the key serde is json; a string key is written with its quotes)", quoted(text))
		}
		if dec.More() {
			return nil, fmt.Errorf("%s holds more than one JSON value", quoted(text))
		}
		if v == nil {
			return nil, errors.New("null is not a key")
		}
	}
	b, err := c.serde.Serialize(c.topic, headers, v)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// parseJSON turns a key given as a JSON value (IQv2 bodies) into its serialised bytes: the
// value itself for the json serde, otherwise a string holding the text form or a number.
func (c fieldCodec) parseJSON(raw json.RawMessage) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if c.kind == "json" || c.kind == kindSchema {
		return c.parse(string(raw), nil)
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return c.parse(s, nil)
	}
	if (c.kind == "long" || c.kind == "integer" || c.kind == "double") && json.Valid(raw) && raw[0] != '{' && raw[0] != '[' {
		return c.parse(string(raw), nil)
	}
	return nil, fmt.Errorf("%s is neither a string nor a number (the key serde is %s)", raw, c.name())
}

// text is the text form of serialised key bytes: what parse reads back.
func (c fieldCodec) text(b []byte) (string, error) {
	switch c.kind {
	case "", "bytes":
		return base64.StdEncoding.EncodeToString(b), nil
	case "json":
		return string(b), nil
	}
	v, err := c.serde.Deserialize(c.topic, nil, b)
	if err != nil {
		return "", err
	}
	if c.kind == kindSchema {
		text, err := json.Marshal(jsonSafe(v))
		return string(text), err
	}
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	default:
		return fmt.Sprint(x), nil
	}
}

// jsonValue decodes stored bytes into a value encoding/json writes as documented in
// docs/queries.md. The result may alias b, so it is encoded before b is reused.
func (c fieldCodec) jsonValue(b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	switch c.kind {
	case "", "bytes":
		return b, nil
	case "json":
		if !json.Valid(b) {
			return nil, errors.New("json serde: stored value is not valid JSON")
		}
		return json.RawMessage(b), nil
	}
	v, err := c.serde.Deserialize(c.topic, nil, b)
	if err != nil {
		return nil, err
	}
	return jsonSafe(v), nil
}

// jsonSafe replaces the floats JSON cannot hold (NaN, infinities) inside v with their text:
// Java's Double.toString spelling is the least surprising.
func jsonSafe(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = jsonSafe(e)
		}
	case []any:
		for i, e := range x {
			x[i] = jsonSafe(e)
		}
	}
	return v
}

func (c fieldCodec) name() string {
	if c.serde == nil {
		return "none"
	}
	return c.serde.Name()
}

// decodeBase64 accepts standard and URL-safe base64, padded or not: keys travel in paths
// and query strings, where either may be more convenient.
func decodeBase64(s string) ([]byte, error) {
	t := strings.TrimRight(strings.NewReplacer("-", "+", "_", "/").Replace(s), "=")
	b, err := base64.RawStdEncoding.DecodeString(t)
	if err != nil {
		return nil, fmt.Errorf("%s is not base64 (keys of bytes and Lua serdes are given as base64 of their bytes)", quoted(s))
	}
	return b, nil
}

// quotedMax is how much of a key's text an error quotes: a key may be as long as a URL,
// and an error that echoes a megabyte helps no one reading it.
const quotedMax = 256

// quoted is text as %q gives it, cut after quotedMax bytes with its length said.
func quoted(text string) string {
	if len(text) <= quotedMax {
		return strconv.Quote(text)
	}
	n := quotedMax
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return fmt.Sprintf("%q… (%d bytes)", text[:n], len(text))
}
