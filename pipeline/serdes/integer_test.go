package serdes

import (
	"encoding/hex"
	"math"
	"testing"
)

func TestIntegerEncoding(t *testing.T) {
	cases := []struct {
		v    int32
		want string
	}{
		{0, "00000000"},
		{1, "00000001"},
		{-1, "ffffffff"},
		{42, "0000002a"},
		{math.MaxInt32, "7fffffff"},
		{math.MinInt32, "80000000"},
	}
	for _, c := range cases {
		b, err := Integer{}.Serialize("t", nil, c.v)
		if err != nil || hex.EncodeToString(b) != c.want {
			t.Errorf("Serialize(%d) = %x, %v; want %s", c.v, b, err, c.want)
		}
		v, err := Integer{}.Deserialize("t", nil, unhex(t, c.want))
		if err != nil || v != c.v {
			t.Errorf("Deserialize(%s) = %#v, %v; want int32 %d", c.want, v, err, c.v)
		}
	}
}

func TestIntegerAcceptsLongInputsInRange(t *testing.T) {
	for _, in := range []any{int64(math.MaxInt32), float64(math.MaxInt32), "2147483647", int(math.MaxInt32)} {
		b, err := Integer{}.Serialize("t", nil, in)
		if err != nil || hex.EncodeToString(b) != "7fffffff" {
			t.Errorf("Serialize(%#v) = %x, %v; want 7fffffff", in, b, err)
		}
	}
}

func TestIntegerRangeChecked(t *testing.T) {
	for _, in := range []any{int64(math.MaxInt32 + 1), float64(math.MinInt32 - 1), "3000000000"} {
		_, err := Integer{}.Serialize("t", nil, in)
		wantError(t, err, "integer", "outside the 32-bit range")
	}
	_, err := Integer{}.Serialize("t", nil, "x")
	wantError(t, err, "integer", `cannot serialize string "x"`)
}

func TestIntegerWrongSize(t *testing.T) {
	for _, n := range []int{0, 3, 8} {
		_, err := Integer{}.Deserialize("t", nil, make([]byte, n))
		wantError(t, err, "integer", "Size of data received by IntegerDeserializer is not 4")
	}
}
