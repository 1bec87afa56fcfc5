package schemas

import (
	"testing"
)

// FuzzDeserialize feeds arbitrary bytes to each format under registered schemas: a record
// from outside may fail to decode, never panic, hang or allocate beyond its size.
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
			_, _ = s.Deserialize("t", nil, data)
		}
	})
}
