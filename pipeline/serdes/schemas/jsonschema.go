package schemas

import (
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/stoatflow/stoatflow/pipeline/serdes"
)

// The json-schema serde writes the json serde's UTF-8 JSON text after the header and checks
// every value against the schema both ways (santhosh-tekuri/jsonschema), so a record that
// does not match is a serialisation or deserialisation error rather than a surprise
// downstream. Schemas without $schema are draft-07, as Confluent's are.
type jsonSchemaFormat struct{}

func (jsonSchemaFormat) name() string         { return "json-schema" }
func (jsonSchemaFormat) schemaFormat() Format { return FormatJSON }
func (jsonSchemaFormat) index() int           { return 2 }

// jsonSchemaRoot is the URL the compiled schema is known by; references keep their names.
const jsonSchemaRoot = "stoatflow:schema.json"

func (jsonSchemaFormat) compile(s Schema, refs []namedSchema, _ string) (codec, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7)
	// No loader: a schema from the registry must not make the agent read files or URLs.
	c.UseLoader(jsonschema.SchemeURLLoader{})
	for _, r := range refs {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(r.schema.Text))
		if err != nil {
			return nil, fmt.Errorf("referenced schema %q: %w", r.name, err)
		}
		if err := c.AddResource(r.name, doc); err != nil {
			return nil, fmt.Errorf("referenced schema %q: %w", r.name, err)
		}
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(s.Text))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if err := c.AddResource(jsonSchemaRoot, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(jsonSchemaRoot)
	if err != nil {
		return nil, errors.New(oneLine(err))
	}
	jc := &jsonSchemaCodec{schema: sch}
	if obj, ok := doc.(map[string]any); ok {
		jc.title, _ = obj["title"].(string)
	}
	return jc, nil
}

type jsonSchemaCodec struct {
	schema *jsonschema.Schema
	title  string
}

// recordName is the schema's title, as Confluent's JSON Schema serializer names records.
func (c *jsonSchemaCodec) recordName() string { return c.title }

func (c *jsonSchemaCodec) decode(payload []byte) (any, error) {
	v, err := serdes.JSON{}.Deserialize("", nil, nonNil(payload))
	if err != nil {
		return nil, err
	}
	if err := c.schema.Validate(v); err != nil {
		return nil, invalid(err)
	}
	return v, nil
}

func (c *jsonSchemaCodec) encode(dst []byte, v any) ([]byte, error) {
	if err := c.schema.Validate(v); err != nil {
		return dst, invalid(err)
	}
	text, err := serdes.JSON{}.Serialize("", nil, v)
	if err != nil {
		return dst, err
	}
	return append(dst, text...), nil
}

// nonNil keeps an empty payload from reading as a tombstone: it is invalid JSON.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// invalid is a validation failure, on one line.
func invalid(err error) error {
	return fmt.Errorf("the value does not match the JSON schema: %s", oneLine(err))
}

// oneLine flattens the library's indented multi-line errors: they travel in logs and headers.
func oneLine(err error) string {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	return strings.ReplaceAll(msg, `"`+jsonSchemaRoot+`#"`, "the schema")
}
