package state

import (
	"bytes"
	"math"
	"sort"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

func TestVarintVectors(t *testing.T) {
	for _, c := range []struct {
		v    int32
		want []byte
	}{
		{0, []byte{0x00}},
		{-1, []byte{0x01}},
		{1, []byte{0x02}},
		{5, []byte{0x0a}},
		{64, []byte{0x80, 0x01}},
		{300, []byte{0xd8, 0x04}},
		{math.MaxInt32, []byte{0xfe, 0xff, 0xff, 0xff, 0x0f}},
		{math.MinInt32, []byte{0xff, 0xff, 0xff, 0xff, 0x0f}},
	} {
		got := appendVarint(nil, c.v)
		if !bytes.Equal(got, c.want) {
			t.Errorf("varint(%d) = %x, want %x", c.v, got, c.want)
		}
		if varintLen(c.v) != len(c.want) {
			t.Errorf("varintLen(%d) = %d, want %d", c.v, varintLen(c.v), len(c.want))
		}
		back, n, err := readVarint(got)
		if err != nil || back != c.v || n != len(got) {
			t.Errorf("readVarint(%x) = %d, %d, %v", got, back, n, err)
		}
	}
	for _, bad := range [][]byte{{}, {0x80}, {0xff, 0xff, 0xff, 0xff, 0x7f}} {
		if _, _, err := readVarint(bad); err == nil {
			t.Errorf("readVarint(%x) accepted", bad)
		}
	}
}

func TestTimestampedValueFormat(t *testing.T) {
	got := appendTimestamped(nil, []byte("v"), 258)
	want := []byte{0, 0, 0, 0, 0, 0, 1, 2, 'v'}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %x want %x", got, want)
	}
	v, ts, err := splitTimestamped(got)
	if err != nil || string(v) != "v" || ts != 258 {
		t.Fatalf("split: %q %d %v", v, ts, err)
	}
	if _, _, err := splitTimestamped([]byte{1, 2}); err == nil {
		t.Fatal("short timestamped value accepted")
	}
}

func TestHeadersFormat(t *testing.T) {
	if got := appendHeaders(nil, nil); !bytes.Equal(got, []byte{0x00}) {
		t.Fatalf("no headers = %x", got)
	}
	// size 5, count 1, key "a", value "b"
	one := pipeline.Headers{{Key: "a", Value: []byte("b")}}
	want := []byte{0x0a, 0x02, 0x02, 'a', 0x02, 'b'}
	if got := appendHeaders(nil, one); !bytes.Equal(got, want) {
		t.Fatalf("one header = %x, want %x", got, want)
	}
	// a null value has length -1 = 0x01
	null := pipeline.Headers{{Key: "k"}, {Key: "e", Value: []byte{}}}
	wantNull := []byte{0x0e, 0x04, 0x02, 'k', 0x01, 0x02, 'e', 0x00}
	if got := appendHeaders(nil, null); !bytes.Equal(got, wantNull) {
		t.Fatalf("null header = %x, want %x", got, wantNull)
	}
	h, rest, err := parseHeaders(append(wantNull, 'p'))
	if err != nil || string(rest) != "p" || len(h) != 2 || h[0].Value != nil || h[1].Value == nil || h[1].Key != "e" {
		t.Fatalf("parse: %+v %q %v", h, rest, err)
	}
	if rest, err := skipHeaders(append(want, 'q')); err != nil || string(rest) != "q" {
		t.Fatalf("skip: %q %v", rest, err)
	}
	// a headers-aware timestamped value: size, headers, timestamp, value
	v := appendTimestamped(appendHeaders(nil, one), []byte("x"), 1)
	if !bytes.Equal(v, []byte{0x0a, 0x02, 0x02, 'a', 0x02, 'b', 0, 0, 0, 0, 0, 0, 0, 1, 'x'}) {
		t.Fatalf("headers value = %x", v)
	}
	for _, bad := range [][]byte{{0x0a, 0x02}, {0x04, 0x02, 0x02, 'a'}, {0x02, 0x01}, {0x06, 0x02, 0x02, 0xff, 0x01, 0x00}} {
		if _, _, err := parseHeaders(bad); err == nil {
			t.Errorf("parseHeaders(%x) accepted", bad)
		}
	}
}

func TestChangelogKeyFormats(t *testing.T) {
	w := appendWindowChangelogKey(nil, []byte("k"), 5, 1)
	if !bytes.Equal(w, []byte{'k', 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 1}) {
		t.Fatalf("window key %x", w)
	}
	k, start, seq, err := splitWindowChangelogKey(w)
	if err != nil || string(k) != "k" || start != 5 || seq != 1 {
		t.Fatalf("split window: %q %d %d %v", k, start, seq, err)
	}
	s := appendSessionChangelogKey(nil, []byte("k"), 1, 2)
	if !bytes.Equal(s, []byte{'k', 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1}) {
		t.Fatalf("session key %x", s)
	}
	k, st, end, err := splitSessionChangelogKey(s)
	if err != nil || string(k) != "k" || st != 1 || end != 2 {
		t.Fatalf("split session: %q %d %d %v", k, st, end, err)
	}
	if _, _, _, err := splitWindowChangelogKey(make([]byte, 11)); err == nil {
		t.Fatal("short window key accepted")
	}
	if _, _, _, err := splitSessionChangelogKey(make([]byte, 15)); err == nil {
		t.Fatal("short session key accepted")
	}
}

// The escaped layout must sort like the raw keys, keep each key's entries together and
// order times as signed numbers.
func TestEscapedKeyOrder(t *testing.T) {
	keys := [][]byte{{}, {0x00}, {0x00, 0x00}, {0x00, 0x01}, {0x01}, []byte("a"), {'a', 0x00}, {'a', 0x00, 0x01}, []byte("ab"), {0x7f}, {0x80}, {0xff}, {0xff, 0xff}}
	times := []int64{math.MinInt64, -1, 0, 1, math.MaxInt64}
	type entry struct {
		key []byte
		ts  int64
		enc []byte
	}
	var entries []entry
	for _, k := range keys {
		for _, ts := range times {
			entries = append(entries, entry{k, ts, appendTime(appendEscaped(nil, k), ts)})
		}
	}
	sort.Slice(entries, func(i, j int) bool { return bytes.Compare(entries[i].enc, entries[j].enc) < 0 })
	for i := 1; i < len(entries); i++ {
		a, b := entries[i-1], entries[i]
		c := bytes.Compare(a.key, b.key)
		if c > 0 || c == 0 && a.ts >= b.ts {
			t.Fatalf("%x@%d sorts before %x@%d", a.key, a.ts, b.key, b.ts)
		}
	}
	for _, k := range keys {
		got, err := unescape(appendEscaped(nil, k))
		if err != nil || !bytes.Equal(got, k) {
			t.Fatalf("unescape(%x) = %x, %v", k, got, err)
		}
		if bytes.Compare(appendEscaped(nil, k), escapedKeyEnd(k)) >= 0 {
			t.Fatalf("escapedKeyEnd(%x) is not above the key", k)
		}
	}
	for _, bad := range [][]byte{{'a'}, {0x00, 0x02, 0x00, 0x01}} {
		if _, err := unescape(bad); err == nil {
			t.Errorf("unescape(%x) accepted", bad)
		}
	}
}
