package serdes

import (
	"encoding/json"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Deserialize sits on the per-record hot path: it may allocate the result and nothing else.
// A string result is two allocations (its bytes and the interface's string header); the
// number boxes are one (values above 255, which Go does not box from a static table).
func TestDeserializeAllocations(t *testing.T) {
	cases := []struct {
		serde pipeline.Serde
		data  []byte
		max   float64
	}{
		{String{}, []byte("user-0000012345"), 2},
		{Bytes{}, []byte("user-0000012345"), 2},
		{Long{}, []byte{0, 0, 1, 0, 0, 0, 0, 0}, 1},
		{Integer{}, []byte{0, 1, 0, 0}, 1},
		{Double{}, []byte{0x3f, 0xf8, 0, 0, 0, 0, 0, 0}, 1},
	}
	for _, c := range cases {
		n := testing.AllocsPerRun(100, func() {
			if _, err := c.serde.Deserialize("t", nil, c.data); err != nil {
				t.Fatal(err)
			}
		})
		if n > c.max {
			t.Errorf("%s: Deserialize allocates %v times, want at most %v", c.serde.Name(), n, c.max)
		}
	}
}

func benchSerde(b *testing.B, s pipeline.Serde, value any) {
	data, err := s.Serialize("t", nil, value)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Serialize", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Serialize("t", nil, value); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Deserialize", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := s.Deserialize("t", nil, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkSerde_string(b *testing.B) { benchSerde(b, String{}, "user-0000012345") }

func BenchmarkSerde_bytes(b *testing.B) { benchSerde(b, Bytes{}, []byte("user-0000012345")) }

func BenchmarkSerde_long(b *testing.B) { benchSerde(b, Long{}, int64(1700000000000)) }

func BenchmarkSerde_integer(b *testing.B) { benchSerde(b, Integer{}, int32(123456)) }

func BenchmarkSerde_double(b *testing.B) { benchSerde(b, Double{}, 1.5) }

func BenchmarkSerde_json(b *testing.B) {
	benchSerde(b, JSON{}, map[string]any{
		"id":    json.Number("1234567890123"),
		"name":  "stoat",
		"tags":  []any{"a", "b"},
		"score": 9.5,
		"ok":    true,
	})
}
