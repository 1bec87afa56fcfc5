package kafkaio

import (
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// The transaction requests to the coordinators, retried Producer.Transaction.Retry.Backoff
// apart while the coordinator moves, loads or finishes the previous transaction, for up to
// the transaction timeout (Producer.Transaction.Timeout, transaction.timeout.ms): long
// enough to outlast a coordinator's move when its broker dies (the cluster notices after
// broker.session.timeout.ms, 9 s by default), and no longer than a transaction can live:
// the coordinator aborts one older than that by itself.

// retriableTxnErrors are the coordinator answers that a later try, after a refreshed
// coordinator for the first two, can cure.
var retriableTxnErrors = map[sarama.KError]bool{
	sarama.ErrConsumerCoordinatorNotAvailable: true,
	sarama.ErrNotCoordinatorForConsumer:       true,
	sarama.ErrOffsetsLoadInProgress:           true,
	sarama.ErrConcurrentTransactions:          true,
	sarama.ErrUnknownTopicOrPartition:         true,
	sarama.ErrRequestTimedOut:                 true,
}

// retryTxn calls call on the coordinator until it answers without a retriable error. When
// the time runs out on retriable errors (the coordinator unreachable, moving or loading),
// the error wraps ErrTimeout, as Java's TimeoutException: the same call may pass later.
func (p *Producer) retryTxn(coordinator func() (*sarama.Broker, error), refresh func() error, call func(*sarama.Broker) (sarama.KError, error)) error {
	backoff, within := p.cfg.Producer.Transaction.Retry.Backoff, p.cfg.Producer.Transaction.Timeout
	start := time.Now()
	var last error
	tries := 0
	for ; tries == 0 || time.Since(start)+backoff < within; tries++ {
		if tries > 0 {
			time.Sleep(txnRetryBackoff(last, backoff))
		}
		b, err := coordinator()
		if err != nil {
			last = err
			_ = refresh()
			continue
		}
		kerr, err := call(b)
		switch {
		case err != nil: // the connection failed: find the coordinator again
			last = err
			_ = b.Close()
			_ = refresh()
			continue
		case kerr == sarama.ErrNoError:
			return nil
		case !retriableTxnErrors[kerr]:
			return kerr
		case kerr == sarama.ErrConsumerCoordinatorNotAvailable || kerr == sarama.ErrNotCoordinatorForConsumer:
			_ = refresh()
		}
		last = kerr
	}
	return fmt.Errorf("%w: no answer without a retriable error in %d tries over %v: %w",
		ErrTimeout, tries, time.Since(start).Round(time.Millisecond), last)
}

// concurrentTxnBackoff is how long a request waits before it asks again after
// CONCURRENT_TRANSACTIONS, Java's producer's ADD_PARTITIONS_RETRY_BACKOFF_MS: the coordinator
// is only writing the previous transaction's markers, which takes milliseconds, and every
// transaction's first AddPartitionsToTxn right after a commit meets it on Apache Kafka. With
// the whole retry.backoff.ms (100 ms) there, an exactly-once pipe committing every 100 ms
// spent about half its time waiting (bench/NOTES.md, 2026-12-06).
const concurrentTxnBackoff = 20 * time.Millisecond

// txnRetryBackoff is the wait before the next try after the answer last.
func txnRetryBackoff(last error, backoff time.Duration) time.Duration {
	if last == sarama.ErrConcurrentTransactions {
		return min(backoff, concurrentTxnBackoff)
	}
	return backoff
}

func (p *Producer) txnCoordinator() (*sarama.Broker, error) {
	return p.client.TransactionCoordinator(p.txnID)
}

func (p *Producer) refreshTxnCoordinator() error {
	return p.client.RefreshTransactionCoordinator(p.txnID)
}

// worstError is the answer for several partitions: the first error no retry cures, else
// the first retriable one.
func worstError(errs map[string][]*sarama.PartitionError) sarama.KError {
	worst := sarama.ErrNoError
	for _, parts := range errs {
		for _, pe := range parts {
			switch {
			case pe.Err == sarama.ErrNoError:
			case !retriableTxnErrors[pe.Err]:
				return pe.Err
			case worst == sarama.ErrNoError:
				worst = pe.Err
			}
		}
	}
	return worst
}

// addToTxn adds the partitions of batches that are new in the open transaction to it
// before their first batch is sent, and returns the batches that may be sent. When the
// coordinator refuses the request, the batches of every partition it was to add fail (the
// transaction must then abort anyway); those of partitions added earlier go on.
func (p *Producer) addToTxn(batches []*batch) []*batch {
	if p.txnID == "" {
		return batches
	}
	p.txnMu.Lock()
	defer p.txnMu.Unlock()
	p.mu.Lock()
	gen, id, epoch := p.txnGen, p.producerID, p.producerEpoch
	add := map[string][]int32{}
	added := make([]bool, len(batches)) // in the transaction already
	for i, b := range batches {
		if added[i] = b.ps.txnGen == gen; !added[i] {
			add[b.ps.topic] = append(add[b.ps.topic], b.ps.id)
		}
	}
	p.mu.Unlock()
	if len(add) == 0 {
		return batches
	}
	req := &sarama.AddPartitionsToTxnRequest{
		Version: txnVersion(p.cfg.Version), TransactionalID: p.txnID,
		ProducerID: id, ProducerEpoch: epoch, TopicPartitions: add,
	}
	err := p.retryTxn(p.txnCoordinator, p.refreshTxnCoordinator, func(b *sarama.Broker) (sarama.KError, error) {
		resp, err := b.AddPartitionsToTxn(req)
		if err != nil {
			return 0, err
		}
		return worstError(resp.Errors), nil
	})
	p.mu.Lock()
	if err == nil {
		p.txnAdded = true
		for _, b := range batches {
			b.ps.txnGen = gen
		}
		p.mu.Unlock()
		return batches
	}
	p.mu.Unlock()
	// The batches of the partitions the request was to add fail; the others go on.
	keep := batches[:0]
	var failed []*batch
	for i, b := range batches {
		if added[i] {
			keep = append(keep, b)
		} else {
			failed = append(failed, b)
		}
	}
	for _, b := range failed {
		p.failBatch(b, err)
	}
	p.mu.Lock()
	for _, b := range failed {
		ps := b.ps
		p.dequeueLocked(b)
		ps.busy, ps.inFlight = false, false
		p.scheduleLocked(ps, false)
	}
	p.mu.Unlock()
	return keep
}

// addOffsetsToTxn adds the group's offsets to the open transaction: AddOffsetsToTxn to
// the transaction coordinator, then TxnOffsetCommit to the group's coordinator with the
// member's generation (KIP-447).
func (p *Producer) addOffsetsToTxn(offsets map[string][]*sarama.PartitionOffsetMetadata, group *sarama.ConsumerGroupMetadata) error {
	p.mu.Lock()
	id, epoch := p.producerID, p.producerEpoch
	p.mu.Unlock()
	add := &sarama.AddOffsetsToTxnRequest{
		Version: txnVersion(p.cfg.Version), TransactionalID: p.txnID,
		ProducerID: id, ProducerEpoch: epoch, GroupID: group.GroupID,
	}
	if err := p.retryTxn(p.txnCoordinator, p.refreshTxnCoordinator, func(b *sarama.Broker) (sarama.KError, error) {
		resp, err := b.AddOffsetsToTxn(add)
		if err != nil {
			return 0, err
		}
		return resp.Err, nil
	}); err != nil {
		return err
	}
	p.mu.Lock()
	p.txnAdded = true
	p.mu.Unlock()
	commit := &sarama.TxnOffsetCommitRequest{
		Version: txnOffsetCommitVersion(p.cfg.Version), TransactionalID: p.txnID, GroupID: group.GroupID,
		ProducerID: id, ProducerEpoch: epoch, Topics: offsets,
	}
	if commit.Version >= 3 {
		commit.GenerationID, commit.MemberID, commit.GroupInstanceID = group.GenerationID, group.MemberID, group.GroupInstanceID
	}
	groupCoordinator := func() (*sarama.Broker, error) { return p.client.Coordinator(group.GroupID) }
	refresh := func() error { return p.client.RefreshCoordinator(group.GroupID) }
	return p.retryTxn(groupCoordinator, refresh, func(b *sarama.Broker) (sarama.KError, error) {
		resp, err := b.TxnOffsetCommit(commit)
		if err != nil {
			return 0, err
		}
		return worstError(resp.Topics), nil
	})
}

// endTxn commits or aborts the open transaction. A transaction to which nothing was added
// has nothing to end on the broker.
func (p *Producer) endTxn(commit bool) error {
	p.mu.Lock()
	added, id, epoch := p.txnAdded, p.producerID, p.producerEpoch
	p.mu.Unlock()
	if added {
		req := &sarama.EndTxnRequest{
			Version: txnVersion(p.cfg.Version), TransactionalID: p.txnID,
			ProducerID: id, ProducerEpoch: epoch, TransactionResult: commit,
		}
		if err := p.retryTxn(p.txnCoordinator, p.refreshTxnCoordinator, func(b *sarama.Broker) (sarama.KError, error) {
			resp, err := b.EndTxn(req)
			if err != nil {
				return 0, err
			}
			return resp.Err, nil
		}); err != nil {
			return err
		}
	}
	p.mu.Lock()
	p.txnAdded = false
	p.mu.Unlock()
	p.inTxn.Store(false)
	return nil
}
