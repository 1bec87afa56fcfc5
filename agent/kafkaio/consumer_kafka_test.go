//go:build kafka

// The twins of consumer_test.go on Apache Kafka 4.4: the consumer group, its commits and
// static membership on the real group coordinator.

package kafkaio

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaConsumeRoundTrip(t *testing.T) {
	t.Parallel()
	consumeRoundTrip(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaCommitThenResume(t *testing.T) {
	t.Parallel()
	commitThenResume(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaBatchesKeepToMaxPollRecords(t *testing.T) {
	t.Parallel()
	batchesKeepToMaxPollRecords(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaRevokingOnCloseDropsBufferedBatches(t *testing.T) {
	t.Parallel()
	revokingOnCloseDropsBufferedBatches(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaRebalanceBetweenTwoMembers(t *testing.T) {
	t.Parallel()
	rebalanceBetweenTwoMembers(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaStaticMembership(t *testing.T) {
	t.Parallel()
	staticMembership(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaConsumerReportsJoinErrors(t *testing.T) {
	t.Parallel()
	consumerReportsJoinErrors(t, onKafka(t, kafkatest.Options{}))
}

func TestKafkaCommitDoesNotWaitForAFetchLongPoll(t *testing.T) {
	t.Parallel()
	commitDoesNotWaitForAFetchLongPoll(t, onKafka(t, kafkatest.Options{}))
}
