package kafkaio

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/IBM/sarama"
)

// requestedPartitioner lets each record choose its partition. sarama overwrites
// msg.Partition with the partitioner's answer, but it still holds the caller's value when
// Partition is called: Send stores the requested partition there, or -1 to let the key
// decide. A keyed record goes where Java's default partitioner (and so Kafka Streams)
// puts it: murmur2 of the key bytes; a record without key goes to a random partition.
type requestedPartitioner struct{}

func newRequestedPartitioner(string) sarama.Partitioner { return requestedPartitioner{} }

func (requestedPartitioner) Partition(msg *sarama.ProducerMessage, numPartitions int32) (int32, error) {
	if msg.Partition >= 0 {
		if msg.Partition >= numPartitions {
			return -1, sarama.ErrInvalidPartition
		}
		return msg.Partition, nil
	}
	if msg.Key == nil {
		return rand.Int32N(numPartitions), nil
	}
	key, err := msg.Key.Encode()
	if err != nil {
		return -1, err
	}
	return murmur2Partition(key, numPartitions), nil
}

// RequiresConsistency is true: sarama then offers every partition, not only the writable
// ones, so a requested or hashed partition number means the same partition everywhere.
func (requestedPartitioner) RequiresConsistency() bool { return true }

// MessageRequiresConsistency frees only unkeyed records without a requested partition to
// be spread over the partitions that currently have a leader.
func (requestedPartitioner) MessageRequiresConsistency(msg *sarama.ProducerMessage) bool {
	return msg.Partition >= 0 || msg.Key != nil
}

// murmur2Partition is Kafka's Utils.toPositive(Utils.murmur2(key)) % numPartitions.
func murmur2Partition(key []byte, numPartitions int32) int32 {
	return int32(murmur2(key)&0x7fffffff) % numPartitions
}

// murmur2 is the 32-bit MurmurHash2 variant of Kafka's Utils.murmur2 (seed 0x9747b28c),
// which every Java producer uses to place keyed records.
func murmur2(data []byte) uint32 {
	const (
		seed = 0x9747b28c
		m    = 0x5bd1e995
		r    = 24
	)
	n := len(data)
	h := uint32(seed) ^ uint32(n)
	for len(data) >= 4 {
		k := binary.LittleEndian.Uint32(data)
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
		data = data[4:]
	}
	switch len(data) {
	case 3:
		h ^= uint32(data[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
