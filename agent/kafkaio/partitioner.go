package kafkaio

import (
	"math/rand/v2"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
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
	return pipeline.DefaultPartition(key, numPartitions), nil
}

// RequiresConsistency is true: sarama then offers every partition, not only the writable
// ones, so a requested or hashed partition number means the same partition everywhere.
func (requestedPartitioner) RequiresConsistency() bool { return true }

// MessageRequiresConsistency frees only unkeyed records without a requested partition to
// be spread over the partitions that currently have a leader.
func (requestedPartitioner) MessageRequiresConsistency(msg *sarama.ProducerMessage) bool {
	return msg.Partition >= 0 || msg.Key != nil
}
