package serdes

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
)

// FuzzJSONRoundTrip checks that every value Deserialize produces serialises, and that the
// result decodes to the same value and re-encodes to the same bytes.
func FuzzJSONRoundTrip(f *testing.F) {
	for _, seed := range []string{
		`{"a":[1,2.5,null,{}],"b":"x\u0000y","c":true}`,
		`[]`, `null`, `-0.0e-0`, `"\ud800"`, `{"":{"":[[]]}}`, `123456789012345678901234567890`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := JSON{}.Deserialize("t", nil, data)
		if err != nil {
			return
		}
		b, err := JSON{}.Serialize("t", nil, v)
		if err != nil {
			t.Fatalf("Serialize(Deserialize(%q)): %v", data, err)
		}
		if v == nil {
			if b != nil {
				t.Fatalf("top-level null serialised to %q, want a tombstone", b)
			}
			return
		}
		v2, err := JSON{}.Deserialize("t", nil, b)
		if err != nil || !reflect.DeepEqual(v, v2) {
			t.Fatalf("round trip of %q via %q = %#v, %v; want %#v", data, b, v2, err, v)
		}
		b2, err := JSON{}.Serialize("t", nil, v2)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("re-encoding %q gave %q, %v", b, b2, err)
		}
	})
}

// FuzzLongDeserialize checks that exactly the 8-byte inputs decode, and re-encode unchanged.
func FuzzLongDeserialize(f *testing.F) {
	for _, seed := range [][]byte{{}, {1}, {0, 0, 0, 0, 0, 0, 0, 1}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, make([]byte, 9)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Long{}.Deserialize("t", nil, data)
		if len(data) != 8 {
			if err == nil {
				t.Fatalf("Deserialize of %d bytes succeeded", len(data))
			}
			return
		}
		if err != nil {
			t.Fatalf("Deserialize(%x): %v", data, err)
		}
		b, err := Long{}.Serialize("t", nil, v)
		if err != nil || !bytes.Equal(b, data) {
			t.Fatalf("Serialize(Deserialize(%x)) = %x, %v", data, b, err)
		}
	})
}

// FuzzEverySerde feeds arbitrary bytes to every serde: Deserialize never panics, and what it
// reads serialises back to bytes that read as the same value.
func FuzzEverySerde(f *testing.F) {
	for _, seed := range [][]byte{nil, {}, {0}, {0, 0, 0, 1}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, []byte("stoat"), []byte(`{"a":[1,null]}`), {0xc3, 0x28}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range Names() {
			s, err := ByName(name)
			if err != nil {
				t.Fatal(err)
			}
			v, err := s.Deserialize("t", nil, data)
			if err != nil {
				continue
			}
			out, err := s.Serialize("t", nil, v)
			if err != nil {
				t.Fatalf("%s: %x reads as %#v, which does not serialise: %v", name, data, v, err)
			}
			again, err := s.Deserialize("t", nil, out)
			if err != nil {
				t.Fatalf("%s: %x reads back as an error: %v", name, out, err)
			}
			if fmt.Sprintf("%#v", again) != fmt.Sprintf("%#v", v) {
				t.Fatalf("%s: %#v became %#v", name, v, again)
			}
		}
	})
}
