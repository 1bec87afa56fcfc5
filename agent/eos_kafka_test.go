//go:build kafka

// The twins of eos_test.go, alos_test.go, agent_test.go, cache_test.go and
// configbounds_test.go on Apache Kafka 4.4; the transactional ones on both transaction
// protocols.

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaUncommittedBudgetForcesEarlyCommits(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		b := onKafka(t, o, 1, "in", "out")
		uncommittedBudgetForcesEarlyCommits(t, b)
	})
}

func TestKafkaRestoreAfterDeletingStateGivesSameStore(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		b := onKafka(t, o, 2, "in", "out")
		restoreAfterDeletingState(t, b)
	})
}

func TestKafkaChangelogRecordsSentBeforeTheCommitUnderExactlyOnce(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		b := onKafka(t, o, 1, "in", "out")
		changelogSentBeforeTheCommitUnderExactlyOnce(t, b)
	})
}

func TestKafkaChangelogRecordsSentBeforeTheCommitUnderAtLeastOnce(t *testing.T) {
	t.Parallel()
	b := onKafka(t, kafkatest.Options{}, 1, "in", "out")
	changelogSentBeforeTheCommitUnderAtLeastOnce(t, b)
}

func TestKafkaAgentEndToEndWithHeaders(t *testing.T) {
	t.Parallel()
	b := onKafka(t, kafkatest.Options{}, 2, "in", "out")
	endToEndWithHeaders(t, b)
}

func TestKafkaStopMidStreamThenRestartLosesNothing(t *testing.T) {
	t.Parallel()
	b := onKafka(t, kafkatest.Options{}, 3, "in", "out")
	stopMidStreamThenRestart(t, b)
}

func TestKafkaDebugLogs(t *testing.T) {
	t.Parallel()
	b := onKafka(t, kafkatest.Options{}, 1, "in", "out")
	debugLogs(t, b)
}

func TestKafkaRecordCacheCollapsesUpdatesPerEpoch(t *testing.T) {
	t.Parallel()
	b := onKafka(t, kafkatest.Options{}, 1, "in", "out")
	recordCacheCollapsesUpdatesPerEpoch(t, b)
}

func TestKafkaCommitIntervalZeroCommitsEveryBatch(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		b := onKafka(t, o, 1, "in", "out")
		commitIntervalZeroCommitsEveryBatch(t, b)
	})
}

func TestKafkaLuaErrorStopsTheAgentNamingLineAndRecord(t *testing.T) {
	t.Parallel()
	b := onKafka(t, kafkatest.Options{}, 1, "in", "out")
	luaErrorStopsTheAgentNamingLineAndRecord(t, b)
}

func TestKafkaRunningIsLoggedInRunning(t *testing.T) {
	t.Parallel()
	b := onKafka(t, kafkatest.Options{}, 1, "in", "out")
	runningIsLoggedInRunning(t, b)
}
