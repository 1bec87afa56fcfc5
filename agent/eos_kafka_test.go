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
	transactionalTwin(t, uncommittedBudgetForcesEarlyCommits, 1, "in", "out")
}

func TestKafkaRestoreAfterDeletingStateGivesSameStore(t *testing.T) {
	transactionalTwin(t, restoreAfterDeletingState, 2, "in", "out")
}

func TestKafkaChangelogRecordsSentBeforeTheCommitUnderExactlyOnce(t *testing.T) {
	transactionalTwin(t, changelogSentBeforeTheCommitUnderExactlyOnce, 1, "in", "out")
}

func TestKafkaChangelogRecordsSentBeforeTheCommitUnderAtLeastOnce(t *testing.T) {
	twin(t, kafkatest.Options{}, changelogSentBeforeTheCommitUnderAtLeastOnce, 1, "in", "out")
}

func TestKafkaAgentEndToEndWithHeaders(t *testing.T) {
	twin(t, kafkatest.Options{}, endToEndWithHeaders, 2, "in", "out")
}

func TestKafkaStopMidStreamThenRestartLosesNothing(t *testing.T) {
	twin(t, kafkatest.Options{}, stopMidStreamThenRestart, 3, "in", "out")
}

func TestKafkaDebugLogs(t *testing.T) { twin(t, kafkatest.Options{}, debugLogs, 1, "in", "out") }

func TestKafkaRecordCacheCollapsesUpdatesPerEpoch(t *testing.T) {
	twin(t, kafkatest.Options{}, recordCacheCollapsesUpdatesPerEpoch, 1, "in", "out")
}

func TestKafkaCommitIntervalZeroCommitsEveryBatch(t *testing.T) {
	transactionalTwin(t, commitIntervalZeroCommitsEveryBatch, 1, "in", "out")
}

func TestKafkaLuaErrorStopsTheAgentNamingLineAndRecord(t *testing.T) {
	twin(t, kafkatest.Options{}, luaErrorStopsTheAgentNamingLineAndRecord, 1, "in", "out")
}

func TestKafkaRunningIsLoggedInRunning(t *testing.T) {
	twin(t, kafkatest.Options{}, runningIsLoggedInRunning, 1, "in", "out")
}
