//go:build kafka

// The twins on Apache Kafka 4.4 of the tests of what an agent reads and how it leaves:
// global tables (global_test.go), pattern sources (patterns_test.go), a close over HTTP
// (close_test.go) and a state database rebuilt from the changelogs (statedb_test.go).

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaGlobalTableBootstrapUpdatesAndRestart(t *testing.T) {
	twin(t, kafkatest.Options{}, globalTableBootstrapUpdatesAndRestart, 2, "orders", "products", "out")
}

func TestKafkaPatternSourcePicksUpANewTopic(t *testing.T) {
	twin(t, kafkatest.Options{}, patternSourcePicksUpANewTopic, 1, "other", "out")
}

func TestKafkaCloseOverHTTPWithGroupMembershipOperation(t *testing.T) {
	twin(t, kafkatest.Options{}, closeOverHTTPWithGroupMembershipOperation, 1, "in", "out")
}

func TestKafkaCorruptStateIsRebuiltFromChangelog(t *testing.T) {
	transactionalTwin(t, corruptStateIsRebuiltFromChangelog, 2, "in", "out")
}
