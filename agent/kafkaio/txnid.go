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

// MakeTransactional turns a producer config into the application's transactional producer,
// named TransactionalID(c, processID). CommitTxn flushes by itself, so there is no linger
// timer for each commit to wait for.
func MakeTransactional(sc *sarama.Config, c *config.Config, processID string) {
	sc.Producer.Transaction.ID = TransactionalID(c, processID)
	sc.Producer.Flush.Frequency = 0
	sc.Producer.Flush.Bytes = 0
	sc.Producer.Retry.Max = min(sc.Producer.Retry.Max, txnRetries)
}

// TransactionalID is the agent's transactional.id: stable across restarts of the same
// instance, so a restarted agent fences the producer of its previous run, and distinct per
// application and instance. It is <application.id>-<group.instance.id>, but in a streams
// group (processID set) whose agent has no group.instance.id written in its config:
// there the default <application.id>-<hostname> would be the same for two agents on one
// host, which would fence each other's transactions, so the id is the one Kafka Streams'
// EOSv2 gives the producer of its first stream thread, <application.id>-<processId>-1,
// from the process id the agent keeps in its state directory. An agent has one
// transactional producer for all its workers, as a Kafka Streams instance of one thread.
func TransactionalID(c *config.Config, processID string) string {
	if processID != "" && !c.GroupInstanceIDSet {
		return c.ApplicationID + "-" + processID + "-1"
	}
	return c.ApplicationID + "-" + c.GroupInstanceID
}
