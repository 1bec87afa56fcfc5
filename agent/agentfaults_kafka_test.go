//go:build kafka && !race

// The twins of kcat_test.go and faults_test.go on Apache Kafka 4.4, on both transaction
// protocols. Like their kfake originals, they drive sarama's transactional producer through
// its error paths, so they build without the race detector (IBM/sarama#2913).

package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestKafkaEOSReadByTwoClients(t *testing.T) {
	transactionalTwin(t, eosReadByTwoClients, 2, "in", "out")
}

func TestKafkaInjectedFailureExactlyOnce(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		b := onKafka(t, o, 2, "in", "out")
		injectedFailure(t, b, true)
	})
}

func TestKafkaInjectedFailureNonTransactionalStores(t *testing.T) {
	t.Parallel()
	b := onKafka(t, kafkatest.Options{}, 2, "in", "out")
	injectedFailure(t, b, false)
}

// Three kills (make test's kfake original: six) prove the same on the real broker.
func TestKafkaSIGKILLLoopExactlyOnce(t *testing.T) {
	kafkatest.EachTransactionVersion(t, func(t *testing.T, o kafkatest.Options) {
		b := onKafka(t, o, 2, "in", "out")
		sigkillLoop(t, b, 3)
	})
}
