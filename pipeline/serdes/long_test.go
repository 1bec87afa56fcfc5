package serdes

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"testing"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Kafka's LongSerializer encodings.
func TestLongEncoding(t *testing.T) {
	cases := []struct {
		v    int64
		want string
	}{
		{0, "0000000000000000"},
		{1, "0000000000000001"},
		{-1, "ffffffffffffffff"},
		{256, "0000000000000100"},
		{math.MaxInt64, "7fffffffffffffff"},
		{math.MinInt64, "8000000000000000"},
		{1700000000000, "0000018bcfe56800"},
	}
	for _, c := range cases {
		b, err := Long{}.Serialize("t", nil, c.v)
		if err != nil || hex.EncodeToString(b) != c.want {
			t.Errorf("Serialize(%d) = %x, %v; want %s", c.v, b, err, c.want)
		}
		v, err := Long{}.Deserialize("t", nil, unhex(t, c.want))
		if err != nil || v != c.v {
			t.Errorf("Deserialize(%s) = %#v, %v; want int64 %d", c.want, v, err, c.v)
		}
	}
}

func TestLongAcceptedInputs(t *testing.T) {
	cases := []struct {
		in   any
		want int64
	}{
		{int(-5), -5},
		{int32(7), 7},
		{float64(42), 42},
		{float64(-(1<<53 - 1)), -(1<<53 - 1)},
		{"9223372036854775807", math.MaxInt64},
		{"-9223372036854775808", math.MinInt64},
		{"+12", 12},
		{json.Number("123456789012345678"), 123456789012345678},
	}
	for _, c := range cases {
		b, err := Long{}.Serialize("t", nil, c.in)
		if err != nil {
			t.Errorf("Serialize(%#v): %v", c.in, err)
			continue
		}
		want, _ := Long{}.Serialize("t", nil, c.want)
		if !bytes.Equal(b, want) {
			t.Errorf("Serialize(%#v) = %x, want %x", c.in, b, want)
		}
	}
}

func TestLongSerializeErrors(t *testing.T) {
	cases := []struct {
		in        any
		fragments []string
	}{
		{"12a", []string{`cannot serialize string "12a"`, "not a decimal integer"}},
		{"", []string{`cannot serialize string ""`}},
		{"1.0", []string{"not a decimal integer"}},
		{"9223372036854775808", []string{"outside the 64-bit range"}},
		{1.5, []string{"cannot serialize float64 1.5", "not an integer"}},
		{math.NaN(), []string{"NaN", "not an integer"}},
		{math.Inf(-1), []string{"-Inf", "not an integer"}},
		{float64(1 << 53), []string{"9.007199254740992e+15", "pass the value as a decimal string"}},
		{-1e300, []string{"decimal string"}},
		{true, []string{"cannot serialize bool true"}},
		{[]byte{1}, []string{"cannot serialize []uint8"}},
	}
	for _, c := range cases {
		_, err := Long{}.Serialize("t", nil, c.in)
		wantError(t, err, "long", c.fragments...)
	}
}

func TestLongWrongSize(t *testing.T) {
	for _, n := range []int{0, 4, 9} {
		_, err := Long{}.Deserialize("t", nil, make([]byte, n))
		wantError(t, err, "long", "Size of data received by LongDeserializer is not 8")
	}
}
