package console

import (
	"encoding/json"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// TestTapShowsUndecodedAvroAsDecoded: a record an avro source hands on undecoded (to Lua
// callbacks) shows in a tap as the same record decoded does, bytes as Base64.
func TestTapShowsUndecodedAvroAsDecoded(t *testing.T) {
	s, err := schemas.NewFactory(schemas.Config{Registry: schemas.NewMemoryRegistry(), AutoRegister: true}).New("avro", false,
		schemas.Spec{Schema: `{"type": "record", "name": "R", "fields": [{"name": "n", "type": "long"}, {"name": "b", "type": "bytes"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	data, err := s.Serialize("t", nil, map[string]any{"n": int64(1) << 60, "b": []byte{0, 255}})
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := s.Deserialize("t", nil, data)
	if err != nil {
		t.Fatal(err)
	}
	s.(*schemas.Serde).SetRawValues(true)
	raw, err := s.Deserialize("t", nil, data)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(tapValue(decoded))
	got, err := json.Marshal(tapValue(raw))
	if err != nil || string(got) != string(want) {
		t.Fatalf("the tap shows %s (%v), want %s", got, err, want)
	}
}
