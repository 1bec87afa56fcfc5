package serdes

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestJSONDeserializeTypes(t *testing.T) {
	in := `{"s":"grüße","n":9007199254740993,"f":1.50,"t":true,"z":null,"a":[1,null,[]],"o":{},"e":"\u0041\n"}`
	v, err := JSON{}.Deserialize("t", nil, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"s": "grüße",
		"n": json.Number("9007199254740993"),
		"f": json.Number("1.50"),
		"t": true,
		"z": nil,
		"a": []any{json.Number("1"), nil, []any{}},
		"o": map[string]any{},
		"e": "A\n",
	}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("Deserialize = %#v\nwant %#v", v, want)
	}
}

func TestJSONDeserializeScalars(t *testing.T) {
	cases := map[string]any{
		`"x"`:    "x",
		` 12 `:   json.Number("12"),
		"false":  false,
		"null":   nil, // a tombstone, see the JSON type's contract
		"[]\n":   []any{},
		"{}\t\r": map[string]any{},
	}
	for in, want := range cases {
		v, err := JSON{}.Deserialize("t", nil, []byte(in))
		if err != nil || !reflect.DeepEqual(v, want) {
			t.Errorf("Deserialize(%q) = %#v, %v; want %#v", in, v, err, want)
		}
	}
}

func TestJSONDeserializeErrors(t *testing.T) {
	cases := []struct {
		in        string
		fragments []string
	}{
		{"", []string{"no value"}},
		{"  ", []string{"no value"}},
		{`{"a":`, []string{"data ends inside a value"}},
		{`{"a" 1}`, []string{"invalid JSON at offset", "after object key"}},
		{`{} x`, []string{"continues after the value ending at offset 2"}},
		{`1 2`, []string{"continues after the value"}},
		{`[1]]`, []string{"continues after the value"}},
		{"\"a\xff\"", []string{"not valid UTF-8", "offset 2 of 4"}},
	}
	for _, c := range cases {
		_, err := JSON{}.Deserialize("t", nil, []byte(c.in))
		wantError(t, err, "json", c.fragments...)
	}
}

func TestJSONSerializeText(t *testing.T) {
	cases := []struct {
		in   any
		want string
	}{
		{map[string]any{"b": 1, "a": []any{}, "c": map[string]any{}}, `{"a":[],"b":1,"c":{}}`},
		{[]any(nil), `[]`},
		{map[string]any(nil), `{}`},
		{[]any{nil, true, false}, `[null,true,false]`},
		{"a\"b\\c\n\r\t\x01\x1f</>&\x7f", `"a\"b\\c\n\r\t\u0001\u001f</>&` + "\x7f\""},
		{"ü🦦\u2028", "\"ü🦦\u2028\""},
		{float64(3), `3`},
		{1.5, `1.5`},
		{-0.25, `-0.25`},
		{1e20, `100000000000000000000`},
		{1e21, `1e+21`},
		{1e-7, `1e-07`},
		{math.Copysign(0, -1), `-0`},
		{int64(math.MaxInt64), `9223372036854775807`},
		{int32(-7), `-7`},
		{json.Number("1.50"), `1.50`},
		{json.Number("-0e+10"), `-0e+10`},
		{map[string]any{"k": json.Number("9007199254740993")}, `{"k":9007199254740993}`},
	}
	for _, c := range cases {
		b, err := JSON{}.Serialize("t", nil, c.in)
		if err != nil || string(b) != c.want {
			t.Errorf("Serialize(%#v) = %s, %v; want %s", c.in, b, err, c.want)
		}
	}
}

// The JSON Lua contract: null inside containers and empty containers survive a round trip.
func TestJSONRoundTripContract(t *testing.T) {
	values := []any{
		[]any{nil, []any{}, map[string]any{}},
		map[string]any{"x": nil, "y": []any{nil}, "": "empty key"},
		json.Number("-12345678901234567890"),
		"",
	}
	for _, v := range values {
		b, err := JSON{}.Serialize("t", nil, v)
		if err != nil {
			t.Fatalf("Serialize(%#v): %v", v, err)
		}
		got, err := JSON{}.Deserialize("t", nil, b)
		if err != nil || !reflect.DeepEqual(got, v) {
			t.Errorf("round trip of %#v via %s = %#v, %v", v, b, got, err)
		}
	}
}

func TestJSONSerializeErrors(t *testing.T) {
	cases := []struct {
		in        any
		fragments []string
	}{
		{map[string]any{"a": []any{1, math.NaN()}}, []string{"NaN", "no NaN or infinity", "at $.a[1]"}},
		{[]any{math.Inf(1)}, []string{"at $[0]"}},
		{map[string]any{"my key": map[string]any{"x1": make(chan int)}}, []string{"cannot serialize chan int", `at $["my key"].x1`}},
		{map[string]any{"tags": []string{"a"}}, []string{"cannot serialize []string", "at $.tags"}},
		{map[string]any{"1a": "\xff"}, []string{`string "\xff" is not valid UTF-8`, `at $["1a"]`}},
		{map[string]any{"ok": map[string]any{"\xfe": 1}}, []string{"object key", "not valid UTF-8", "at $.ok"}},
		{json.Number("01"), []string{`json.Number "01" is not a JSON number`, "at $"}},
		{float32(1), []string{"cannot serialize float32 1"}},
	}
	for _, c := range cases {
		_, err := JSON{}.Serialize("t", nil, c.in)
		wantError(t, err, "json", c.fragments...)
	}
}

func TestJSONSerializeCycleRefused(t *testing.T) {
	m := map[string]any{}
	m["self"] = m
	_, err := JSON{}.Serialize("t", nil, m)
	wantError(t, err, "json", "nesting deeper than 10000 levels", "at $.self.self")
	if len(err.Error()) > 200 {
		t.Errorf("cycle error message is %d bytes long", len(err.Error()))
	}
}

// Whatever Deserialize accepts, Serialize can write back: the depth limits agree.
func TestJSONDeepestDecodableValueSerializes(t *testing.T) {
	in := strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth)
	v, err := JSON{}.Deserialize("t", nil, []byte(in))
	if err != nil {
		t.Fatalf("Deserialize of %d nested arrays: %v", maxJSONDepth, err)
	}
	b, err := JSON{}.Serialize("t", nil, v)
	if err != nil || string(b) != in {
		t.Fatalf("Serialize of %d nested arrays: %v", maxJSONDepth, err)
	}
	deeper := []any{v}
	if _, err := (JSON{}).Serialize("t", nil, deeper); err == nil {
		t.Fatalf("Serialize of %d nested arrays succeeded", maxJSONDepth+1)
	}
}

func TestIsJSONNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "12", "1.5", "1e5", "1E+5", "-1.25e-3", "0.0"} {
		if !isJSONNumber(s) {
			t.Errorf("isJSONNumber(%q) = false", s)
		}
	}
	for _, s := range []string{"", "-", "01", "1.", ".5", "1e", "1e+", "+1", "0x10", "NaN", "1 ", "1.5.5"} {
		if isJSONNumber(s) {
			t.Errorf("isJSONNumber(%q) = true", s)
		}
	}
}
