package console

import (
	"encoding/json"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
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

// A tap shows a value as its node's serde writes it: a long a Lua script holds as a decimal
// string is the number a store of that serde holds (the purchases example's lastOrderId),
// through an Avro schema or the long serde; a value the serde cannot write, or a node whose
// serde is unknown, shows as it is.
func TestTapShowsValuesAsTheirSerdeWritesThem(t *testing.T) {
	s, err := schemas.NewFactory(schemas.Config{Registry: schemas.NewMemoryRegistry(), AutoRegister: true}).New("avro", false,
		schemas.Spec{Schema: `{"type": "record", "name": "Spend", "fields": [{"name": "lastOrderId", "type": "long"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	big := "9007199254741017"
	for _, c := range []struct {
		serde pipeline.Serde
		value any
		want  string
	}{
		{s, pipeline.Change{New: map[string]any{"lastOrderId": big}}, `{"new":{"lastOrderId":9007199254741017},"old":null}`},
		{serdes.Long{}, big, `9007199254741017`},
		{serdes.Long{}, "not a number", `"not a number"`},
		{serdes.String{}, big, `"9007199254741017"`},
		{nil, big, `"9007199254741017"`},
	} {
		got, err := json.Marshal(tapValue(asWritten(c.serde, c.value)))
		if err != nil || string(got) != c.want {
			t.Errorf("%v through %T: %s (%v), want %s", c.value, c.serde, got, err, c.want)
		}
	}
}
