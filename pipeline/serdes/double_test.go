package serdes

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"testing"
)

func TestDoubleEncoding(t *testing.T) {
	cases := []struct {
		v    float64
		want string
	}{
		{0, "0000000000000000"},
		{1.5, "3ff8000000000000"},
		{-2, "c000000000000000"},
		{math.Inf(1), "7ff0000000000000"},
		{math.MaxFloat64, "7fefffffffffffff"},
	}
	for _, c := range cases {
		b, err := Double{}.Serialize("t", nil, c.v)
		if err != nil || hex.EncodeToString(b) != c.want {
			t.Errorf("Serialize(%v) = %x, %v; want %s", c.v, b, err, c.want)
		}
		v, err := Double{}.Deserialize("t", nil, unhex(t, c.want))
		if err != nil || v != c.v {
			t.Errorf("Deserialize(%s) = %#v, %v; want float64 %v", c.want, v, err, c.v)
		}
	}
}

func TestDoubleNaNRoundTrip(t *testing.T) {
	b, err := Double{}.Serialize("t", nil, math.NaN())
	if err != nil {
		t.Fatal(err)
	}
	v, err := Double{}.Deserialize("t", nil, b)
	f, ok := v.(float64)
	if err != nil || !ok || !math.IsNaN(f) {
		t.Fatalf("NaN round trip = %#v, %v", v, err)
	}
}

func TestDoubleAcceptsExactInts(t *testing.T) {
	for _, in := range []any{int64(3), 3, int32(3), json.Number("3"), json.Number("3e0")} {
		b, err := Double{}.Serialize("t", nil, in)
		if err != nil || hex.EncodeToString(b) != "4008000000000000" {
			t.Errorf("Serialize(%#v) = %x, %v; want 4008000000000000", in, b, err)
		}
	}
	if _, err := (Double{}).Serialize("t", nil, int64(1<<62)); err != nil {
		t.Errorf("Serialize(2^62): %v", err)
	}
}

func TestDoubleSerializeErrors(t *testing.T) {
	_, err := Double{}.Serialize("t", nil, int64(1<<53+1))
	wantError(t, err, "double", "int64 9007199254740993", "cannot hold it exactly")
	_, err = Double{}.Serialize("t", nil, int64(math.MaxInt64))
	wantError(t, err, "double", "cannot hold it exactly")
	_, err = Double{}.Serialize("t", nil, json.Number("1e400"))
	wantError(t, err, "double", "not a finite double")
	_, err = Double{}.Serialize("t", nil, "1.5")
	wantError(t, err, "double", `cannot serialize string "1.5"`)
}

func TestDoubleWrongSize(t *testing.T) {
	_, err := Double{}.Deserialize("t", nil, []byte{1, 2, 3, 4})
	wantError(t, err, "double", "Size of data received by Deserializer is not 8", "got 4 bytes")
}
