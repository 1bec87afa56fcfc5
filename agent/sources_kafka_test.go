//go:build kafka

// The twins on Apache Kafka 4.4 of the tests of what an agent reads and how it leaves:
// global tables and stores (global_test.go, globalstore_test.go), pattern sources
// (patterns_test.go), a close over HTTP (close_test.go) and a state database rebuilt from
// the changelogs (statedb_test.go, statedb_corrupt_test.go).

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaGlobalTableBootstrapUpdatesAndRestart(t *testing.T) {
	twin(t, kafkatest.Options{}, globalTableBootstrapUpdatesAndRestart, 2, "orders", "products", "out")
}

func TestKafkaAddGlobalStoreReadsItsTopicThroughTheProcessor(t *testing.T) {
	twin(t, kafkatest.Options{}, addGlobalStoreReadsItsTopicThroughTheProcessor, 2, "rates-in", "amounts", "out")
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

func TestKafkaCorruptStateFoundWhileRunningIsRebuilt(t *testing.T) {
	t.Parallel()
	corruptStateFoundWhileRunningIsRebuilt(t, onKafkaCluster(kafkatest.Options{}))
}

func TestKafkaCorruptStateFoundByAQueryIsRebuilt(t *testing.T) {
	twin(t, kafkatest.Options{}, corruptStateFoundByAQueryIsRebuilt, 2, "in", "out")
}
