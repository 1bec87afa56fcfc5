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
	t.Parallel()
	b := onKafka(t, kafkatest.Options{}, 2, "orders", "products", "out")
	globalTableBootstrapUpdatesAndRestart(t, b)
}

func TestKafkaPatternSourcePicksUpANewTopic(t *testing.T) {
	t.Parallel()
	b := onKafka(t, kafkatest.Options{}, 1, "other", "out")
	patternSourcePicksUpANewTopic(t, b)
}

func TestKafkaCloseOverHTTPWithGroupMembershipOperation(t *testing.T) {
	t.Parallel()
	b := onKafka(t, kafkatest.Options{}, 1, "in", "out")
	closeOverHTTPWithGroupMembershipOperation(t, b)
}

func TestKafkaCorruptStateIsRebuiltFromChangelog(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		b := onKafka(t, o, 2, "in", "out")
		corruptStateIsRebuiltFromChangelog(t, b)
	})
}
