package pipeline

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestVarintLen(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, 64, -64, -65, 8191, 8192, 1 << 40, math.MaxInt64, math.MinInt64} {
		if got, want := varintLen(v), len(binary.AppendVarint(nil, v)); got != want {
			t.Errorf("varintLen(%d) = %d, want %d", v, got, want)
		}
	}
}

// The bytes carve hands out are the collector's for as long as it keeps them: a record's
// part of a block is never the next record's, even when appended to past its size, and a
// record larger than carveMax is not cut from a block.
func TestCarveKeepsRecordsApart(t *testing.T) {
	ctx := &Context{}
	var parts [][]byte
	for i := range 2 * carveBlock / 3 {
		p := append(ctx.carve(3), fmt.Sprintf("%03d", i%1000)...)
		if cap(p) != 3 {
			t.Fatalf("record %d: capacity %d, want 3", i, cap(p))
		}
		parts = append(parts, p)
		if grown := append(parts[i/2], '!'); &grown[0] == &parts[i/2][0] {
			t.Fatalf("record %d grew in place, over the next record's bytes", i/2)
		}
	}
	for i, p := range parts {
		if want := fmt.Sprintf("%03d", i%1000); string(p) != want {
			t.Fatalf("record %d holds %q, want %q", i, p, want)
		}
	}
	left := len(ctx.block)
	if big := ctx.carve(carveMax + 1); cap(big) != carveMax+1 || len(ctx.block) != left {
		t.Fatalf("a record of %d bytes: capacity %d, block left %d of %d", carveMax+1, cap(big), len(ctx.block), left)
	}
	if p := (*Context)(nil).carve(5); len(p) != 0 || cap(p) != 5 {
		t.Fatalf("without a context: len %d cap %d, want an empty slice for 5 bytes", len(p), cap(p))
	}
}

// Every Change written through one node keeps its bytes while later ones are written: the
// collector may still hold them (the producer until the broker acknowledged them).
func TestChangedSerdeValuesOutliveTheNextRecord(t *testing.T) {
	s := changedSerde{keys: bytesSerde{}, values: bytesSerde{}}
	ctx := &Context{}
	type written struct{ value, want []byte }
	var all []written
	for i := range 1000 {
		v := strings.Repeat("x", i%70)
		c, want := Change{New: v}, v+"\x01"
		switch i % 3 {
		case 1:
			c, want = Change{Old: v}, v+"\x00"
		case 2:
			c, want = Change{New: v, Old: "o"}, string(binary.AppendVarint(nil, int64(len(v))))+v+"o\x02"
		}
		_, value, err := s.encode(ctx, "app-t-repartition", Record{Key: "k", Value: c})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, written{value, []byte(want)})
	}
	for i, w := range all {
		if !bytes.Equal(w.value, w.want) {
			t.Fatalf("record %d now holds %q, want %q", i, w.value, w.want)
		}
	}
}
