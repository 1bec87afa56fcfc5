package pipeline

import "encoding/binary"

// Murmur2 is Kafka's Utils.murmur2, the hash behind the producer's default partitioner. Java
// computes it on signed ints; unsigned 32-bit arithmetic gives the same bits, with Java's
// logical shifts (>>>) becoming plain shifts.
func Murmur2(data []byte) int32 {
	const (
		seed = 0x9747b28c
		m    = 0x5bd1e995
		r    = 24
	)
	n := len(data)
	h := uint32(seed) ^ uint32(n)
	i := 0
	for ; i+4 <= n; i += 4 {
		k := binary.LittleEndian.Uint32(data[i:])
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	// Kafka's tail switch falls through: three trailing bytes mix in all three.
	switch n - i {
	case 3:
		h ^= uint32(data[i+2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[i+1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[i])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// DefaultPartition is the partition Kafka's producer picks for a serialised key when no
// partition is given: murmur2 with the sign bit masked off (Utils.toPositive, not an absolute
// value), modulo the partition count. A null key has no deterministic partition in Kafka, so
// callers decide before calling. numPartitions must be positive; it comes from topic metadata.
func DefaultPartition(keyBytes []byte, numPartitions int32) int32 {
	return (Murmur2(keyBytes) & 0x7fffffff) % numPartitions
}
