package schemas

import (
	"testing"
)

// benchValue is the same record in the three formats: the fields of the json serde's
// benchmark, so the numbers compare.
var benchValue = map[string]any{"id": int64(1234567890123), "name": "stoat", "tags": []any{"a", "b"}, "score": 9.5, "ok": true}

var benchSchemas = map[string]string{
	"avro": `{"type": "record", "name": "Stoat", "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
		{"name": "tags", "type": {"type": "array", "items": "string"}}, {"name": "score", "type": "double"}, {"name": "ok", "type": "boolean"}]}`,
	"protobuf": `syntax = "proto3"; message Stoat { int64 id = 1; string name = 2; repeated string tags = 3; double score = 4; bool ok = 5; }`,
	"json-schema": `{"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
		"tags": {"type": "array", "items": {"type": "string"}}, "score": {"type": "number"}, "ok": {"type": "boolean"}}, "required": ["id", "name"]}`,
}

func benchFormat(b *testing.B, name string) {
	s, err := NewFactory(Config{Registry: NewMemoryRegistry(), AutoRegister: true}).New(name, false, Spec{Schema: benchSchemas[name]})
	if err != nil {
		b.Fatal(err)
	}
	data, err := s.Serialize("t", nil, benchValue)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Serialize", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Serialize("t", nil, benchValue); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Deserialize", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := s.Deserialize("t", nil, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkSchemaSerde_avro(b *testing.B) { benchFormat(b, "avro") }

func BenchmarkSchemaSerde_protobuf(b *testing.B) { benchFormat(b, "protobuf") }

func BenchmarkSchemaSerde_jsonSchema(b *testing.B) { benchFormat(b, "json-schema") }
