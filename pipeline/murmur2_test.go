package pipeline

import (
	"strconv"
	"testing"
)

// Expected values from Kafka's UtilsTest.testMurmur2.
func TestMurmur2KafkaVectors(t *testing.T) {
	cases := []struct {
		in   []byte
		want int32
	}{
		{[]byte("21"), -973932308},
		{[]byte("foobar"), -790332482},
		{[]byte("a-little-bit-long-string"), -985981536},
		{[]byte("a-little-bit-longer-string"), -1486304829},
		{[]byte("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"), -58897971},
		{[]byte{'a', 'b', 'c'}, 479470107},
		// Derived from Kafka's Utils.murmur2 by its rules: empty input, 5 bytes, non-ASCII 4-byte block.
		{[]byte{}, 275646681},
		{[]byte("hello"), 2132663229},
		{[]byte{0, 0, 0, 0x2a}, 1606757304},
		{[]byte{0, 0, 0, 2}, 1586072243},
	}
	for _, c := range cases {
		if got := Murmur2(c.in); got != c.want {
			t.Errorf("Murmur2(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestMurmur2NilEqualsEmpty(t *testing.T) {
	if Murmur2(nil) != Murmur2([]byte{}) {
		t.Fatal("nil and empty input hash differently")
	}
}

// Partitions for String keys over 3 partitions, from the comments in Kafka's
// KTableKTableForeignKeyInnerJoinMultiIntegrationTest.
func TestDefaultPartitionKafkaStringKeys(t *testing.T) {
	want := []int32{2, 0, 2, 2, 1, 0, 1, 0, 0, 2}
	for i, w := range want {
		key := strconv.Itoa(i)
		if got := DefaultPartition([]byte(key), 3); got != w {
			t.Errorf("DefaultPartition(%q, 3) = %d, want %d", key, got, w)
		}
	}
}

func TestDefaultPartitionCounts(t *testing.T) {
	counts := []int32{2, 3, 4, 8, 10}
	cases := []struct {
		key  []byte
		want []int32
	}{
		{[]byte("abc"), []int32{1, 0, 3, 3, 7}},
		{[]byte("hello"), []int32{1, 0, 1, 5, 9}},
		{[]byte(""), []int32{1, 0, 1, 1, 1}},
		{[]byte{0, 0, 0, 0x2a}, []int32{0, 0, 0, 0, 4}},
		{[]byte{0, 0, 0, 2}, []int32{1, 2, 3, 3, 3}},
	}
	for _, c := range cases {
		for i, n := range counts {
			if got := DefaultPartition(c.key, n); got != c.want[i] {
				t.Errorf("DefaultPartition(%q, %d) = %d, want %d", c.key, n, got, c.want[i])
			}
		}
	}
}

// A negative hash must be masked, not negated: "21" hashes to -973932308, whose absolute value
// and masked value differ modulo 7.
func TestDefaultPartitionMasksSignBit(t *testing.T) {
	const h = -973932308
	masked := int32((h & 0x7fffffff) % 7)
	negated := int32((-h) % 7)
	if masked == negated {
		t.Fatalf("test vector does not separate masking from negation")
	}
	if got := DefaultPartition([]byte("21"), 7); got != masked {
		t.Fatalf("DefaultPartition(\"21\", 7) = %d, want %d", got, masked)
	}
}

func TestMurmur2DoesNotAllocate(t *testing.T) {
	key := []byte("a-little-bit-longer-string")
	if n := testing.AllocsPerRun(100, func() { DefaultPartition(key, 12) }); n != 0 {
		t.Fatalf("DefaultPartition allocates %v times per call", n)
	}
}

func BenchmarkMurmur2(b *testing.B) {
	key := []byte("user-0000012345")
	b.ReportAllocs()
	for b.Loop() {
		DefaultPartition(key, 12)
	}
}
