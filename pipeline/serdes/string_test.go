package serdes

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

func TestStringRoundTrip(t *testing.T) {
	for _, s := range []string{"", "hello", "grüße 🦦", "\x00nul"} {
		b, err := String{}.Serialize("t", nil, s)
		if err != nil {
			t.Fatalf("Serialize(%q): %v", s, err)
		}
		if !bytes.Equal(b, []byte(s)) {
			t.Fatalf("Serialize(%q) = %x, want its UTF-8 bytes", s, b)
		}
		v, err := String{}.Deserialize("t", nil, b)
		if err != nil || v != s {
			t.Fatalf("Deserialize(%x) = %#v, %v; want %q", b, v, err, s)
		}
	}
}

func TestStringEmptyIsNotTombstone(t *testing.T) {
	v, err := String{}.Deserialize("t", nil, []byte{})
	if err != nil || v != "" {
		t.Fatalf("Deserialize(empty) = %#v, %v; want \"\"", v, err)
	}
	b, err := String{}.Serialize("t", nil, "")
	if err != nil || b == nil || len(b) != 0 {
		t.Fatalf("Serialize(\"\") = %#v, %v; want empty non-nil bytes", b, err)
	}
}

func TestStringSerializeBytesAsIs(t *testing.T) {
	in := []byte("abc")
	b, err := String{}.Serialize("t", nil, in)
	if err != nil || &b[0] != &in[0] {
		t.Fatalf("Serialize([]byte) = %q, %v; want the same slice", b, err)
	}
}

func TestStringRefusesNumbers(t *testing.T) {
	for _, v := range []any{float64(3), int64(3), 3, int32(3), json.Number("3")} {
		_, err := String{}.Serialize("t", nil, v)
		wantError(t, err, "string", "cannot serialize a number", "tostring")
	}
}

func TestStringRefusesOtherTypes(t *testing.T) {
	_, err := String{}.Serialize("t", nil, true)
	wantError(t, err, "string", "cannot serialize bool true")
	_, err = String{}.Serialize("t", nil, map[string]any{})
	wantError(t, err, "string", "cannot serialize map[string]interface {}")
}

func TestStringInvalidUTF8(t *testing.T) {
	_, err := String{}.Deserialize("t", nil, []byte{'o', 'k', 0xff, 'x'})
	wantError(t, err, "string", "not valid UTF-8", "offset 2 of 4")
	_, err = String{}.Deserialize("t", nil, []byte{0xe2, 0x82}) // truncated 3-byte sequence
	wantError(t, err, "string", "offset 0 of 2")
	_, err = String{}.Serialize("t", nil, "a\xc3")
	wantError(t, err, "string", "not valid UTF-8", "bytes serde")
	_, err = String{}.Serialize("t", nil, []byte{0xc0, 0x80})
	wantError(t, err, "string", "not valid UTF-8")
}

// A string serialises to its own bytes, with no allocation: callers never write into them
// (pipeline.Serde); the bytes serde does the same with a string value.
func TestStringSerializeSharesTheString(t *testing.T) {
	for _, serde := range []pipeline.Serde{String{}, Bytes{}} {
		var v any = strings.Repeat("word ", 20)
		b, err := serde.Serialize("t", nil, v)
		if err != nil || string(b) != v || len(b) != cap(b) {
			t.Fatalf("%s: Serialize = %q (cap %d), %v", serde.Name(), b, cap(b), err)
		}
		if n := testing.AllocsPerRun(100, func() { b, _ = serde.Serialize("t", nil, v) }); n != 0 {
			t.Fatalf("%s: %v allocations per Serialize, want 0", serde.Name(), n)
		}
	}
}

// A string of up to maxBoxedString bytes deserialises in one allocation, its bytes and its
// box together, and shares no memory with the data.
func TestStringDeserializeAllocatesOnce(t *testing.T) {
	data := []byte(strings.Repeat("lowebo 0000012345 ", 6))
	var v any
	if n := testing.AllocsPerRun(100, func() { v, _ = String{}.Deserialize("t", nil, data) }); n != 1 {
		t.Fatalf("%v allocations per Deserialize, want 1", n)
	}
	want := string(data)
	data[0] = 'X'
	if v != want {
		t.Fatalf("Deserialize = %q, want %q (the data was overwritten after it)", v, want)
	}
}
