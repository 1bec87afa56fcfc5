package pipeline

import "testing"

// The vectors are Kafka Streams 4.4's Murmur3.hash128 of the same bytes.
func TestMurmur3Hash128MatchesKafkaStreams(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, c := range []struct {
		in     []byte
		h1, h2 uint64
	}{
		{[]byte(""), 0x9d2764a018e32942, 0x8c3cf3b035938518},
		{[]byte("a"), 0x3361634e7e0f5188, 0xe9c7dda24eae326b},
		{[]byte("abc"), 0x8cc66bdf24a3b65e, 0xe942bed9d38bee40},
		{[]byte("0123456789abcde"), 0xc480e6b5c0016979, 0xa0d033624a7f7904},
		{[]byte("0123456789abcdef"), 0x1a6e941ec6a76967, 0xd7d82808f505d6b1},
		{[]byte("0123456789abcdefg"), 0xa93635c3ece7b605, 0xaeed6784d1b08b32},
		{[]byte("The quick brown fox jumps over the lazy dog"), 0xe74c5921af0f99c8, 0xb7f85ec81df06726},
		{[]byte("éÿ"), 0x89391c48fa113710, 0x4e997471d83f26bc},
		{all[:7], 0xb86934b8dc59fac0, 0xf662105f9a34d35e},
		{all[:8], 0xca8e92af6000cddb, 0xf635f85e1061f8d6},
		{all[:9], 0xfd96cb5bf0db595a, 0x7d8e8e88d37e959f},
		{all[:31], 0x7cb11ca7d8a75abc, 0xeb1b7433891174bd},
		{all[:33], 0x77d41624a7a86fc9, 0x89318937cc2db42c},
		{all[:255], 0x323e8394d80bde37, 0x7b26752840b2a0f4},
		{all, 0xb2a226ef10b55db5, 0x957be3141432d449},
	} {
		if got := murmur3Hash128(c.in); got != [2]uint64{c.h1, c.h2} {
			t.Errorf("murmur3Hash128(%q) = %#016x, %#016x; want %#016x, %#016x", c.in, got[0], got[1], c.h1, c.h2)
		}
	}
}
