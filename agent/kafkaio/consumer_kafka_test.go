//go:build kafka

// The twins of consumer_test.go on Apache Kafka 4.4: the consumer group, its commits and
// static membership on the real group coordinator.

package kafkaio

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaConsumeRoundTrip(t *testing.T) { twin(t, kafkatest.Options{}, consumeRoundTrip) }

func TestKafkaCommitThenResume(t *testing.T) { twin(t, kafkatest.Options{}, commitThenResume) }

func TestKafkaBatchesKeepToMaxPollRecords(t *testing.T) {
	twin(t, kafkatest.Options{}, batchesKeepToMaxPollRecords)
}

func TestKafkaRevokingOnCloseDropsBufferedBatches(t *testing.T) {
	twin(t, kafkatest.Options{}, revokingOnCloseDropsBufferedBatches)
}

func TestKafkaRebalanceBetweenTwoMembers(t *testing.T) {
	twin(t, kafkatest.Options{}, rebalanceBetweenTwoMembers)
}

func TestKafkaStaticMembership(t *testing.T) { twin(t, kafkatest.Options{}, staticMembership) }

func TestKafkaConsumerReportsJoinErrors(t *testing.T) {
	twin(t, kafkatest.Options{}, consumerReportsJoinErrors)
}

func TestKafkaCommitDoesNotWaitForAFetchLongPoll(t *testing.T) {
	twin(t, kafkatest.Options{}, commitDoesNotWaitForAFetchLongPoll)
}
