package serdes

import (
	"bytes"
	"testing"
)

func TestBytesSerialize(t *testing.T) {
	in := []byte{0, 1, 0xff}
	b, err := Bytes{}.Serialize("t", nil, in)
	if err != nil || &b[0] != &in[0] {
		t.Fatalf("Serialize([]byte) = %x, %v; want the same slice", b, err)
	}
	b, err = Bytes{}.Serialize("t", nil, "a\xff")
	if err != nil || !bytes.Equal(b, []byte{'a', 0xff}) {
		t.Fatalf("Serialize(string) = %x, %v", b, err)
	}
	_, err = Bytes{}.Serialize("t", nil, 1.5)
	wantError(t, err, "bytes", "cannot serialize float64 1.5")
}

func TestBytesDeserializeCopies(t *testing.T) {
	data := []byte{1, 2, 3}
	v, err := Bytes{}.Deserialize("t", nil, data)
	if err != nil {
		t.Fatal(err)
	}
	got := v.([]byte)
	data[0] = 9
	if !bytes.Equal(got, []byte{1, 2, 3}) {
		t.Fatalf("Deserialize aliased its input: %x", got)
	}
}

func TestBytesEmptyIsNotTombstone(t *testing.T) {
	v, err := Bytes{}.Deserialize("t", nil, []byte{})
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := v.([]byte); !ok || b == nil || len(b) != 0 {
		t.Fatalf("Deserialize(empty) = %#v; want empty non-nil []byte", v)
	}
}
