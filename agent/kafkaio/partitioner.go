package kafkaio

import (
	"math/rand/v2"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// choosePartition is the partition of a record among n: the requested one when requested
// >= 0; else where Java's default partitioner (and so Kafka Streams) puts a keyed record,
// murmur2 of the key bytes; a record without key goes to a random partition.
func choosePartition(requested int32, key []byte, n int32) (int32, error) {
	switch {
	case requested >= n:
		return -1, sarama.ErrInvalidPartition
	case requested >= 0:
		return requested, nil
	case key == nil:
		return rand.Int32N(n), nil
	}
	return pipeline.DefaultPartition(key, n), nil
}
