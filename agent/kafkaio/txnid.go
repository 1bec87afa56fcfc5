package kafkaio

import (
	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/agent/config"
)

// txnRetries bounds a transactional producer's retries. Under exactly-once a failed send
// aborts the epoch's transaction and the epoch is processed again, so giving up early loses
// nothing; retrying for delivery.timeout.ms would instead hold the commit barrier (sarama
// keeps retrying the batches queued before a transaction failed).
const txnRetries = 5

// MakeTransactional turns a producer config into the application's transactional producer.
// The transactional.id is <application.id>-<group.instance.id>: stable across restarts of
// the same instance, so a restarted agent fences the producer of its previous run, and
// distinct per application and instance. CommitTxn flushes by itself, so there is no
// linger timer for each commit to wait for.
func MakeTransactional(sc *sarama.Config, c *config.Config) {
	sc.Producer.Transaction.ID = c.ApplicationID + "-" + c.GroupInstanceID
	sc.Producer.Flush.Frequency = 0
	sc.Producer.Flush.Bytes = 0
	sc.Producer.Retry.Max = min(sc.Producer.Retry.Max, txnRetries)
}
