package pipeline

import (
	"bytes"
	"strings"
	"testing"
)

func TestSessionWindowsValidate(t *testing.T) {
	for _, c := range []struct {
		w    SessionWindows
		want string
	}{
		{SessionWindows{Gap: 0}, "gap must be larger than zero"},
		{SessionWindows{Gap: -1}, "gap must be larger than zero"},
		{SessionWindows{Gap: 1, Grace: -1}, "grace period must not be negative"},
		{SessionWindows{Gap: 1}, ""},
	} {
		err := c.w.Validate()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.w, err, c.want)
		}
	}
}

// Reference §3.5: [key][8-byte BE end][8-byte BE start].
func TestSessionWindowedSerdeBytes(t *testing.T) {
	s := SessionWindowedSerde{Inner: bytesSerde{}}
	want := []byte{'k', 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 3}
	for _, in := range []any{
		Windowed{Key: "k", Start: 3, End: 20},
		map[string]any{"key": "k", "window": map[string]any{"start": int64(3), "end": int64(20)}},
	} {
		b, err := s.Serialize("t", nil, in)
		if err != nil || !bytes.Equal(b, want) {
			t.Fatalf("serialize %v = %x, %v; want %x", in, b, err, want)
		}
	}
	v, err := s.Deserialize("t", nil, want)
	if err != nil || v != (Windowed{Key: "k", Start: 3, End: 20}) {
		t.Fatalf("deserialize = %v, %v", v, err)
	}
	if _, err := s.Deserialize("t", nil, want[:15]); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Fatalf("short key: %v", err)
	}
	if _, err := s.Serialize("t", nil, map[string]any{"key": "k", "window": map[string]any{"start": int64(3)}}); err == nil {
		t.Fatal("a table key without window end serialized")
	}
	if _, err := s.Serialize("t", nil, 42); err == nil {
		t.Fatal("a number serialized as a session key")
	}
}
