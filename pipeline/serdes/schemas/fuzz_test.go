package schemas

import (
	"fmt"
	"testing"
)

// FuzzDeserialize feeds arbitrary bytes to each format under registered schemas: a record
// from outside may fail to decode, never panic, hang or allocate beyond its size; with raw
// values (SetRawValues) it fails or reads alike.
func FuzzDeserialize(f *testing.F) {
	reg := NewMemoryRegistry()
	fac := NewFactory(Config{Registry: reg, AutoRegister: true})
	serdes := map[string]*Serde{}
	for _, name := range Names {
		w, err := fac.New(name, false, Spec{Schema: benchSchemas[name]})
		if err != nil {
			f.Fatal(err)
		}
		b, err := w.Serialize("t", nil, benchValue)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		serdes[name] = w.(*Serde)
	}
	order, err := fac.New("avro", false, Spec{Schema: readTestdata(f, "order.avsc")})
	if err != nil {
		f.Fatal(err)
	}
	b, err := order.Serialize("t", nil, wantOrder())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	serdes["order"] = order.(*Serde)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, s := range serdes {
			s.SetRawValues(false)
			v, err := s.Deserialize("t", nil, data)
			// Raw values are checked exactly as values are decoded.
			s.SetRawValues(true)
			rv, rerr := s.Deserialize("t", nil, data)
			if (err == nil) != (rerr == nil) || (err != nil && err.Error() != rerr.Error()) {
				t.Fatalf("%s: raw error %v, decoding error %v", s.Name(), rerr, err)
			}
			if r, ok := rv.(*Raw); ok {
				if rv, rerr = r.Value(); rerr != nil {
					t.Fatalf("%s: a checked record does not decode: %v", s.Name(), rerr)
				}
			}
			// Printed, as NaN equals no NaN.
			if fmt.Sprintf("%#v", v) != fmt.Sprintf("%#v", rv) {
				t.Fatalf("%s: raw value %#v, decoded %#v", s.Name(), rv, v)
			}
		}
	})
}
