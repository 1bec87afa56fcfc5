package serdes

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
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
	_, err := String{}.Serialize("t", nil, "a\xc3")
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

// Malformed UTF-8 decodes as Java's new String(bytes, UTF_8), Kafka's StringDeserializer:
// testdata/utf8java.txt holds what Java 17 and 25 answer for every class of malformed
// sequence. A few of them, spelled out: the JDK's rule differs from Unicode's
// recommendation for surrogates (one U+FFFD for the three bytes, not three).
func TestStringDecodesInvalidUTF8AsJava(t *testing.T) {
	for in, want := range map[string]string{
		"ok\xffx":           "ok\uFFFDx",
		"\xe2\x82":          "\uFFFD",       // a 3-byte sequence cut short: one
		"\xe2\x82A":         "\uFFFDA",      // ... followed by ASCII
		"\xc0\x80":          "\uFFFD\uFFFD", // an overlong NUL: one per byte
		"\xe0\x80\x80":      "\uFFFD\uFFFD\uFFFD",
		"\xed\xa0\x80":      "\uFFFD", // a surrogate: one for all three bytes
		"\xed\xa0A":         "\uFFFDA",
		"\xf4\x90\x80\x80":  "\uFFFD\uFFFD\uFFFD\uFFFD", // above U+10FFFF
		"\xf0\x9f\x98":      "\uFFFD",                   // a 4-byte sequence cut short
		"\xf0\x9f\x98A":     "\uFFFDA",
		"\xf0\x9fA":         "\uFFFDA",
		"\xf0\x9f\x98\x80x": "\U0001F600x",
	} {
		got, err := String{}.Deserialize("t", nil, []byte(in))
		if err != nil || got != want {
			t.Errorf("% x: got %q, %v; want %q", in, got, err, want)
		}
	}

	f, err := os.Open("testdata/utf8java.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		in, javaOut, ok := strings.Cut(line, " ")
		b, err := hex.DecodeString(in)
		want, err2 := hex.DecodeString(strings.ReplaceAll(javaOut, ".", "efbfbd"))
		if !ok || err != nil || err2 != nil {
			t.Fatalf("testdata/utf8java.txt: bad line %q", line)
		}
		got, err := String{}.Deserialize("t", nil, b)
		if err != nil || got != string(want) {
			t.Errorf("%s: got % x, %v; Java gives % x", in, got, err, want)
		}
		n++
	}
	if n < 3000 {
		t.Fatalf("only %d cases in testdata/utf8java.txt", n)
	}
}
