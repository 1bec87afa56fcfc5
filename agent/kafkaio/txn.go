package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// ErrFenced is wrapped by the errors of a transactional producer that the broker fenced:
// another producer with the same transactional id started. The fenced producer can never
// commit again; its owner must stop (close it), not retry. CommitTxn reports it when the
// coordinator or a partition leader says so; when a record failed first with another
// error (some brokers answer INVALID_TXN_STATE), CommitTxn returns that error and the
// AbortTxn that follows reports ErrFenced. Once reported, every transaction call returns
// it.
var ErrFenced = errors.New("producer fenced: another producer with the same transactional id has started")

// fencedError wraps err with ErrFenced when it is the broker fencing a transactional
// producer. A stale epoch on a produce request means the same for a transactional
// producer (the Java client treats it so); an idempotent one merely bumps its epoch.
func fencedError(transactional bool, err error) error {
	if transactional && (errors.Is(err, sarama.ErrProducerFenced) || errors.Is(err, sarama.ErrInvalidProducerEpoch)) {
		return fmt.Errorf("%w: %w", ErrFenced, err)
	}
	return err
}

// fail classifies an error of this producer and remembers a fencing for good.
func (p *Producer) fail(err error) error {
	err = fencedError(p.txnID != "", err)
	if errors.Is(err, ErrFenced) {
		p.fenced.Store(true)
	}
	return err
}

// Fenced reports whether a broker fenced this transactional producer (until Renew).
func (p *Producer) Fenced() bool { return p.fenced.Load() }

// txnUsable refuses a transaction call that cannot succeed.
func (p *Producer) txnUsable(op string) error {
	switch {
	case p.txnID == "":
		return fmt.Errorf("%s transaction: the producer has no transactional id", op)
	case p.fenced.Load():
		return fmt.Errorf("%s transaction of %q: %w", op, p.txnID, ErrFenced)
	case p.closed.Load():
		return fmt.Errorf("%s transaction of %q: %w", op, p.txnID, errProducerClosed)
	}
	return nil
}

// Renew makes a fenced transactional producer usable again with the same transactional
// id, as Kafka Streams re-creates its producer after a TaskMigratedException: a new
// InitProducerId bumps the epoch and ends whatever transaction of the id is still open, so
// nothing of the fenced transactions can commit any more. The records still in flight are
// failed or acknowledged first and their errors dropped, and the offsets TrackOffsets
// collected are forgotten: they all belonged to the fenced transactions, which the caller
// has dropped. If Renew fails, the producer is closed.
func (p *Producer) Renew() error {
	if p.txnID == "" {
		return errors.New("renew producer: the producer has no transactional id")
	}
	if p.closed.Load() {
		return fmt.Errorf("renew producer %q: %w", p.txnID, errProducerClosed)
	}
	_ = p.sendAll(context.Background())
	p.firstErr.Store(nil)
	if t := p.acked.Load(); t != nil {
		t.take()
	}
	if err := p.reinit(); err != nil {
		_ = p.Close()
		return fmt.Errorf("renew producer %q: %w", p.txnID, err)
	}
	p.inTxn.Store(false)
	p.fenced.Store(false)
	return nil
}

// BeginTxn starts a transaction: the records sent until CommitTxn or AbortTxn belong to
// it. A transactional producer refuses records sent outside a transaction (Send then
// returns the error). BeginTxn, CommitTxn and AbortTxn are called from one goroutine.
func (p *Producer) BeginTxn() error {
	if err := p.txnUsable("begin"); err != nil {
		return err
	}
	if p.inTxn.Load() {
		return fmt.Errorf("begin transaction of %q: a transaction is open already", p.txnID)
	}
	if p.sequenceBroken() {
		if err := p.reinit(); err != nil {
			return fmt.Errorf("begin transaction of %q: %w", p.txnID, p.fail(err))
		}
	}
	p.mu.Lock()
	p.txnGen++
	p.txnAdded, p.txnCommitting = false, false
	p.mu.Unlock()
	p.inTxn.Store(true)
	return nil
}

// CommitTxn waits until every record sent in the transaction is acknowledged, adds
// offsets (the next offset to read, per partition) of consumer group groupID to the
// transaction and commits it: the records and the offsets become visible together.
// ctx bounds the wait for acknowledgements; the requests adding the offsets follow
// sarama's Producer.Transaction.Retry settings. The commit request itself (EndTxn) is
// sent again until the coordinator answers it or ctx ends, as Kafka Streams retries a
// commit that timed out: once sent, it may have reached the coordinator, and only the
// coordinator's answer says whether the transaction commits.
//
// On an error the transaction is not committed and the caller calls AbortTxn, unless the
// error wraps ErrFenced: then the producer is finished.
func (p *Producer) CommitTxn(ctx context.Context, offsets map[pipeline.TopicPartition]int64, groupID string) error {
	return p.CommitTxnInGroup(ctx, offsets, sarama.NewConsumerGroupMetadata(groupID))
}

// CommitTxnInGroup is CommitTxn for the member of the group that group names with its
// generation (KIP-447, Consumer.GroupMetadata): the group coordinator refuses the offsets
// (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) of a member that is no
// longer in that generation, so a paused member that resumes after the group moved on
// cannot commit an epoch another member processes too.
func (p *Producer) CommitTxnInGroup(ctx context.Context, offsets map[pipeline.TopicPartition]int64, group *sarama.ConsumerGroupMetadata) error {
	if err := p.txnUsable("commit"); err != nil {
		return err
	}
	if !p.inTxn.Load() {
		return fmt.Errorf("commit transaction of %q: no transaction is open", p.txnID)
	}
	groupID := group.GroupID
	if len(offsets) > 0 && groupID == "" {
		return fmt.Errorf("commit transaction of %q: offsets of %d partitions for an empty group id", p.txnID, len(offsets))
	}
	var req map[string][]*sarama.PartitionOffsetMetadata
	if len(offsets) > 0 {
		var err error
		if req, err = txnOffsets(offsets); err != nil {
			return fmt.Errorf("commit transaction of %q: group %q: %w", p.txnID, groupID, err)
		}
	}
	if err := p.sendAll(ctx); err != nil {
		return fmt.Errorf("commit transaction of %q: %w", p.txnID, err)
	}
	if e := p.firstErr.Swap(nil); e != nil {
		return fmt.Errorf("commit transaction of %q: %w", p.txnID, p.fail(*e))
	}
	if len(offsets) > 0 {
		if err := p.addOffsetsToTxn(req, group); err != nil {
			return fmt.Errorf("commit transaction of %q: add offsets of group %q (generation %d): %w", p.txnID, groupID, group.GenerationID, p.fail(err))
		}
	}
	p.mu.Lock()
	p.txnCommitting = true
	p.mu.Unlock()
	err := p.endTxn(true)
	for errors.Is(err, ErrTimeout) && ctx.Err() == nil {
		err = p.endTxn(true)
	}
	if err != nil {
		return fmt.Errorf("commit transaction of %q: %w", p.txnID, p.fail(err))
	}
	return nil
}

// txnOffsets converts next offsets to sarama's request shape, in a stable order.
func txnOffsets(offsets map[pipeline.TopicPartition]int64) (map[string][]*sarama.PartitionOffsetMetadata, error) {
	req := make(map[string][]*sarama.PartitionOffsetMetadata)
	for tp, off := range offsets {
		if off < 0 {
			return nil, fmt.Errorf("%s/%d: negative offset %d", tp.Topic, tp.Partition, off)
		}
		req[tp.Topic] = append(req[tp.Topic], &sarama.PartitionOffsetMetadata{Partition: tp.Partition, Offset: off})
	}
	for _, parts := range req {
		sort.Slice(parts, func(i, j int) bool { return parts[i].Partition < parts[j].Partition })
	}
	return req, nil
}

// AbortTxn aborts the transaction: its records stay in the log but read_committed
// readers skip them, and no offset moves. It waits for the records still in flight, drops
// the asynchronous error they left (they belonged to the aborted transaction) and forgets
// the offsets TrackOffsets collected since the last AckedOffsets, which point at aborted
// records. A fenced producer returns an error wrapping ErrFenced.
//
// When the abort does not reach the coordinator (the cluster is down or electing), the
// error wraps ErrTxnAbandoned unless a commit of the transaction was sent: see there.
func (p *Producer) AbortTxn() error {
	if err := p.txnUsable("abort"); err != nil {
		return err
	}
	_ = p.sendAll(context.Background())
	if e := p.firstErr.Swap(nil); e != nil {
		if err := p.fail(*e); errors.Is(err, ErrFenced) {
			return fmt.Errorf("abort transaction of %q: %w", p.txnID, err)
		}
	}
	if t := p.acked.Load(); t != nil {
		t.take()
	}
	if !p.inTxn.Load() {
		return nil
	}
	if err := p.endTxn(false); err != nil {
		return fmt.Errorf("abort transaction of %q: %w", p.txnID, p.abandon(err))
	}
	if p.sequenceBroken() {
		if err := p.reinit(); err != nil {
			return fmt.Errorf("abort transaction of %q: new producer epoch: %w", p.txnID, p.abandon(err))
		}
	}
	return nil
}

// ErrTxnAbandoned is wrapped by AbortTxn's error when the abort did not reach the
// coordinator and no commit of the transaction was sent: the transaction can never commit
// (only this producer could ask for that), so it is over for the caller as if aborted. Its
// records stay invisible to read_committed readers until the coordinator aborts it: when
// the producer takes its next epoch, before its next transaction (BeginTxn), or once it is
// older than transaction.timeout.ms. Kafka Streams goes on the same way after an abort
// that timed out. When a commit was sent, its outcome is unknown and AbortTxn's error does
// not wrap ErrTxnAbandoned: the caller cannot tell whether the transaction committed.
var ErrTxnAbandoned = errors.New("transaction abandoned: the coordinator ends it")

// abandon handles an abort that failed: unless the producer was fenced or had sent a
// commit, the transaction is given up, and the next one starts with a new epoch.
func (p *Producer) abandon(err error) error {
	err = p.fail(err)
	if errors.Is(err, ErrFenced) {
		return err
	}
	p.mu.Lock()
	committing := p.txnCommitting
	if !committing {
		p.seqBroken, p.txnAdded = true, false
	}
	p.mu.Unlock()
	if committing {
		return fmt.Errorf("its commit was sent, and whether it committed is unknown: %w", err)
	}
	p.inTxn.Store(false)
	return fmt.Errorf("%w: %w", ErrTxnAbandoned, err)
}
