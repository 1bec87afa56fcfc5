package schemas

import (
	"reflect"
	"testing"
)

// TestRawValuesAreTheDecodedValues: with SetRawValues, a record comes back undecoded, its
// Value is what Deserialize gives, Serialize writes it as it writes that value, a null is
// still nil, and every prefix of a record (each a truncated or otherwise bad record) fails
// with the very error Deserialize gives.
func TestRawValuesAreTheDecodedValues(t *testing.T) {
	s, _ := newTestSerde(t, "avro", "order.avsc", Spec{})
	data, err := s.Serialize("orders", nil, wantOrder())
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.Deserialize("orders", nil, data)
	if err != nil {
		t.Fatal(err)
	}
	s.SetRawValues(true)
	got, err := s.Deserialize("orders", nil, data)
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := got.(*Raw)
	if !ok {
		t.Fatalf("with raw values the serde returned a %T", got)
	}
	v, err := raw.Value()
	if err != nil || !reflect.DeepEqual(v, want) {
		t.Fatalf("Raw.Value() = %#v, %v\nwant %#v", v, err, want)
	}
	again, err := s.Serialize("orders", nil, raw)
	if err != nil || string(again) != string(data) {
		t.Fatalf("Serialize(raw) = % x, %v\nwant % x", again, err, data)
	}
	for n := range len(data) {
		s.SetRawValues(false)
		_, errGo := s.Deserialize("orders", nil, data[:n])
		s.SetRawValues(true)
		_, errRaw := s.Deserialize("orders", nil, data[:n])
		if errGo == nil || errRaw == nil || errGo.Error() != errRaw.Error() {
			t.Fatalf("the first %d bytes: raw error %v, want %v", n, errRaw, errGo)
		}
	}

	nullable, err := NewFactory(Config{Registry: NewMemoryRegistry(), AutoRegister: true}).New("avro", false,
		Spec{Schema: `["null", {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}]`})
	if err != nil {
		t.Fatal(err)
	}
	ns := nullable.(*Serde)
	w, err := ns.writer("t")
	if err != nil {
		t.Fatal(err)
	}
	null := appendLong(appendHeader(nil, w.id), 0)
	ns.SetRawValues(true)
	if v, err := ns.Deserialize("t", nil, null); v != nil || err != nil {
		t.Fatalf("a null record with raw values read as %#v, %v; want nil (a tombstone)", v, err)
	}
}
