package serdes

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

func TestByNameKnown(t *testing.T) {
	for _, name := range []string{"string", "bytes", "long", "integer", "double", "json"} {
		s, err := ByName(name)
		if err != nil {
			t.Fatalf("ByName(%q): %v", name, err)
		}
		if s.Name() != name {
			t.Errorf("ByName(%q).Name() = %q", name, s.Name())
		}
	}
}

func TestNamesSorted(t *testing.T) {
	got := strings.Join(Names(), ",")
	if want := "bytes,double,integer,json,long,string"; got != want {
		t.Fatalf("Names() = %s, want %s", got, want)
	}
}

func TestBuiltinInDeclarationOrder(t *testing.T) {
	got := strings.Join(Builtin(), ",")
	if want := "string,bytes,json,long,integer,double"; got != want {
		t.Fatalf("Builtin() = %s, want %s", got, want)
	}
}

func TestByNameUnknownListsKnown(t *testing.T) {
	_, err := ByName("Strng")
	if err == nil {
		t.Fatal("ByName(\"Strng\") succeeded")
	}
	want := `unknown serde "Strng" (known: bytes, double, integer, json, long, string, and windowed-<name>, session-windowed-<name>)`
	if err.Error() != want {
		t.Fatalf("error = %q, want %q", err, want)
	}
}

// Kafka Streams' WindowedSerdes by name: windowed-<inner> writes [key][8-byte start]
// (TimeWindowedSerializer) and reads only with a window size; session-windowed-<inner>
// writes [key][8-byte end][8-byte start] (SessionWindowedSerializer).
func TestByNameWindowed(t *testing.T) {
	tw, err := ByName("windowed-string")
	if err != nil {
		t.Fatal(err)
	}
	b, err := tw.Serialize("t", nil, pipeline.Windowed{Key: "k", Start: 5, End: 15})
	if err != nil || string(b) != "k\x00\x00\x00\x00\x00\x00\x00\x05" {
		t.Fatalf("time windowed bytes %q, %v", b, err)
	}
	if _, err := tw.Deserialize("t", nil, b); err == nil || !strings.Contains(err.Error(), "the window size needs to be set") {
		t.Fatalf("reading without a window size: %v", err)
	}
	sized := tw.(pipeline.TimeWindowedSerde)
	sized.Size = 10
	if v, err := sized.Deserialize("t", nil, b); err != nil || v != (pipeline.Windowed{Key: "k", Start: 5, End: 15}) {
		t.Fatalf("read %v, %v", v, err)
	}
	if v, err := sized.Deserialize("t", nil, []byte{}); v != nil || err != nil {
		t.Fatalf("empty bytes read as %v, %v; Kafka reads them as null", v, err)
	}
	sw, err := ByName("session-windowed-long")
	if err != nil {
		t.Fatal(err)
	}
	b, err = sw.Serialize("t", nil, pipeline.Windowed{Key: int64(1), Start: 2, End: 3})
	want := "\x00\x00\x00\x00\x00\x00\x00\x01" + "\x00\x00\x00\x00\x00\x00\x00\x03" + "\x00\x00\x00\x00\x00\x00\x00\x02"
	if err != nil || string(b) != want {
		t.Fatalf("session windowed bytes %q, %v", b, err)
	}
	if v, err := sw.Deserialize("t", nil, b); err != nil || v != (pipeline.Windowed{Key: int64(1), Start: 2, End: 3}) {
		t.Fatalf("read %v, %v", v, err)
	}
	for _, name := range []string{"windowed-nope", "windowed-windowed-string", "session-windowed-windowed-long", "windowed-"} {
		if _, err := ByName(name); err == nil || !strings.Contains(err.Error(), "needs a built-in inner serde") {
			t.Errorf("ByName(%q) error = %v", name, err)
		}
	}
}

// Kafka's serializers map null to null and its deserializers null to null: tombstones pass
// through every serde.
func TestTombstones(t *testing.T) {
	for _, name := range Names() {
		s, _ := ByName(name)
		b, err := s.Serialize("t", nil, nil)
		if err != nil || b != nil {
			t.Errorf("%s: Serialize(nil) = %v, %v; want nil, nil", name, b, err)
		}
		v, err := s.Deserialize("t", nil, nil)
		if err != nil || v != nil {
			t.Errorf("%s: Deserialize(nil) = %v, %v; want nil, nil", name, v, err)
		}
	}
}

// Headers do not change any built-in serde's encoding.
func TestHeadersIgnored(t *testing.T) {
	h := pipeline.Headers{{Key: "content-type", Value: []byte("x")}}
	for _, name := range []string{"string", "long"} {
		s, _ := ByName(name)
		v := map[string]any{"string": "a", "long": int64(7)}[name]
		with, err1 := s.Serialize("t", h, v)
		without, err2 := s.Serialize("t", nil, v)
		if err1 != nil || err2 != nil || !bytes.Equal(with, without) {
			t.Errorf("%s: headers changed the encoding: %x vs %x (%v, %v)", name, with, without, err1, err2)
		}
	}
}

// wantError checks that err names the serde and contains every fragment.
func wantError(t *testing.T, err error, serde string, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", fragments)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, serde+" serde: ") {
		t.Errorf("error %q does not start with %q", msg, serde+" serde: ")
	}
	for _, f := range fragments {
		if !strings.Contains(msg, f) {
			t.Errorf("error %q does not contain %q", msg, f)
		}
	}
}

// The serdes marked canonical keep their promise: what Deserialize returns serialises back
// to the same bytes, whatever the topic and headers; json and double (NaN payloads, -0 from
// other producers) are not marked.
func TestCanonicalSerdesGiveTheirBytesBack(t *testing.T) {
	values := map[string][]any{
		"string":  {"", "word", "ünïcødé", "a\x00b"},
		"bytes":   {[]byte{}, []byte{0, 1, 2, 0xff}, "text"},
		"long":    {int64(0), int64(-1), int64(1) << 62, int64(-1) << 63, int64(255), int64(256), 7, 3.0},
		"integer": {int32(0), int32(-1), int32(1) << 30, int64(-1) << 31, 255},
	}
	var marked []string
	for _, name := range Names() {
		s, err := ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(pipeline.CanonicalSerde); !ok {
			continue
		}
		marked = append(marked, name)
		for _, v := range values[name] {
			b, err := s.Serialize("t", nil, v)
			if err != nil {
				t.Fatalf("%s: serialize %v: %v", name, v, err)
			}
			back, err := s.Deserialize("other", pipeline.Headers{{Key: "h", Value: []byte("x")}}, b)
			if err != nil {
				t.Fatalf("%s: deserialize %x: %v", name, b, err)
			}
			again, err := s.Serialize("t2", pipeline.Headers{{Key: "k"}}, back)
			if err != nil || !bytes.Equal(again, b) {
				t.Errorf("%s: %v → %x → %v → %x (%v)", name, v, b, back, again, err)
			}
		}
	}
	if got := strings.Join(marked, ","); got != "bytes,integer,long,string" {
		t.Fatalf("canonical serdes %s, want bytes,integer,long,string", got)
	}
}
