package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// epoch is the open epoch of the loop and its commit barrier: the offsets consumed since the
// last commit, the transaction they are processed in under exactly-once, the dead letters
// waiting for the barrier, and the calls that commit the epoch or drop it.
//
// At the barrier the epoch's changelog records are sent, then:
//   - exactly_once_v2: outputs, changelog records and consumer offsets commit in one Kafka
//     transaction; only then are the epoch's store writes applied to LevelDB, in one batch
//     with the changelog offsets (acknowledged, all of them, once the commit returned). The
//     batch is written in the background (state.DB.CommitInBackground, as under
//     at-least-once) and the loop starts the next epoch at once, reading the sealed writes
//     under its own; the next barrier, a dropped epoch (loop.retry), a rebuild and close
//     wait for it first, and a write that failed is the database's (an *applyError): the
//     committed epoch is in the changelog, so the database is rebuilt from it if corrupt,
//     else the application stops and its restart restores it. At a rebalance and at
//     shutdown the write is done before the barrier returns. If the transaction fails it is
//     aborted, the store buffer is dropped and the consumer rewinds to the committed
//     offsets: local state is never wiped (with enable.transactional.statestores=false it
//     is, as Kafka Streams does).
//   - at_least_once: the epoch's store writes are sealed and the loop goes on with the
//     next epoch at once, reading the sealed writes under its own. In the background
//     (offsetCommit, state.DB.CommitInBackground) the sealed writes are applied to LevelDB
//     once their changelog records are acknowledged (they went out while the epoch ran),
//     with those records' offsets, and the consumed offsets are committed once every
//     other record it sent (outputs, dead letters) is acknowledged too. The next epoch's
//     changelog records wait until the sealed epoch's are acknowledged; the next barrier
//     waits for the whole background commit first. At a rebalance and at shutdown the
//     barrier waits for every acknowledgement and for LevelDB before it commits the offsets.
//
// The loop owns the topology and the state database (it tells the epoch a rebuilt one);
// sendLetter and restore are the two things the epoch needs of it.
type epoch struct {
	k       *kafkaClients // the producer, and the consumer once the loop made it
	db      *state.DB     // nil without stores
	cfg     *config.Config
	log     *slog.Logger
	metrics *metrics.Metrics
	eos     bool

	changelogOf  map[string]string // changelog topic → store
	changelogFor map[string]string // store → changelog topic
	// sendLetter sends a dead letter in the epoch (loop.sendDeadLetter); restore wipes every
	// store and restores it from its changelog (loop.wipeAndRestore).
	sendLetter func(*deadLetter) error
	restore    func() error

	inTxn   bool
	next    map[pipeline.TopicPartition]int64 // next offset to commit, per partition
	dirty   bool                              // records were consumed since the last commit
	records int                               // how many
	failed  int                               // epochs in a row that failed and were processed again
	// renewProducer is set after the producer was fenced: the next transaction starts on a
	// renewed producer (rejoin).
	renewProducer bool
	skipped       skippedSends // dead letters of records the production handler skipped
	// committing is the epoch committing in the background: under at-least-once its
	// offsets wait for its acknowledgements and its store writes; under exactly-once its
	// transaction committed and its store writes are being applied.
	committing *offsetCommit
}

// newEpoch makes the epoch of a run over db (nil without stores) and the given stores.
func newEpoch(a *Agent, k *kafkaClients, db *state.DB, stores []pipeline.StoreSpec) *epoch {
	e := &epoch{
		k: k, db: db, cfg: a.cfg, log: a.log, metrics: a.metrics,
		eos:          a.cfg.ExactlyOnce(),
		changelogOf:  map[string]string{},
		changelogFor: map[string]string{},
		next:         map[pipeline.TopicPartition]int64{},
	}
	for _, s := range stores {
		if s.Logged {
			t := pipeline.ChangelogTopic(a.cfg.ApplicationID, s.Name)
			e.changelogOf[t] = s.Name
			e.changelogFor[s.Name] = t
		}
	}
	k.producer.TrackOffsets(func(topic string) bool { _, ok := e.changelogOf[topic]; return ok })
	return e
}

// open reports whether the epoch consumed a record or opened a transaction since the last
// commit.
func (e *epoch) open() bool { return e.dirty || e.inTxn }

// consumed counts n records of tp up to next (the offset after the last one) into the epoch.
func (e *epoch) consumed(tp pipeline.TopicPartition, next int64, n int) {
	e.next[tp] = next
	e.dirty = true
	e.records += n
}

// endGeneration forgets the offsets the epochs of a generation of the group reached, once
// its last epoch is committed (or dropped) as the generation ends: the next generation
// reads each of its partitions from the group's committed offset. A partition given up
// with the generation is read on by another member (in a streams group, tasks move between
// agents), which moves its committed offset on; committed again with a later epoch, the
// offset kept here would set the group back, and whoever read the partition next would
// process those records again.
func (e *epoch) endGeneration() { clear(e.next) }

// begin starts the epoch's transaction before its first write under exactly-once.
func (e *epoch) begin() error {
	if !e.eos || e.inTxn {
		return nil
	}
	if err := e.renewFencedProducer(); err != nil {
		return err
	}
	if err := e.k.producer.BeginTxn(); err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	e.inTxn = true
	return nil
}

// sendChangelog sends the epoch's changelog records not sent yet. While the previous
// epoch's changelog acknowledgements are awaited in the background it sends nothing:
// their offsets, committed with that epoch's store writes, are taken as the highest
// acknowledged, and must not cover this epoch's records.
func (e *epoch) sendChangelog() error {
	if e.db == nil {
		return nil
	}
	if c := e.committing; c != nil && !e.eos {
		select {
		case <-c.changelogAcked:
		default:
			return nil
		}
	}
	for _, r := range e.db.TakeChangelog() {
		topic, ok := e.changelogFor[r.Store]
		if !ok {
			continue
		}
		if err := e.k.producer.Send(topic, r.Partition, r.Key, r.Value, r.Headers, r.Timestamp, nil); err != nil {
			return fmt.Errorf("changelog %s: %w", topic, err)
		}
	}
	return nil
}

// applyError is a failure to write an epoch's store buffer to LevelDB after its changelog
// records were acknowledged (and, under exactly-once, its transaction committed): only the
// database can be at fault (loop.recoverState).
type applyError struct{ err error }

func (e *applyError) Error() string { return e.err.Error() }
func (e *applyError) Unwrap() error { return e.err }

// commit is the Kafka and LevelDB half of the commit barrier, after the loop flushed the
// record caches into the epoch; start is when the barrier began. It first waits for the
// epoch committing in the background, if any. wait says the offsets must be committed and
// the store writes applied before commit returns (a rebalance, a shutdown); otherwise the
// store writes are applied in the background, and under at-least-once the offsets are
// committed there too (settle reports how that went). It reports whether the epoch was
// committed (or handed to the background): under at-least-once an offset commit the
// coordinator refuses (a rebalance) leaves the epoch open without an error, its records are
// read again after the rebalance. An error is the loop's to handle (loop.retry; an
// *applyError loop.recoverState).
func (e *epoch) commit(start time.Time, wait bool) (bool, error) {
	if err := e.settle(); err != nil {
		return false, err
	}
	if e.eos {
		return e.commitTxn(start, wait)
	}
	if wait {
		return e.commitAndWait(start)
	}
	return e.commitInBackground(start)
}

// commitAndWait commits an at-least-once epoch before it returns: every record is
// acknowledged, the store writes are applied, and only then are the offsets committed.
func (e *epoch) commitAndWait(start time.Time) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.KafkaWait())
	defer cancel()
	storeBytes := e.storeBytes()
	if err := e.sendChangelog(); err != nil {
		return false, err
	}
	if err := e.k.producer.Flush(ctx); err != nil {
		return false, err
	}
	if err := e.sendSkipped(ctx); err != nil {
		return false, err
	}
	if err := e.applyState(); err != nil {
		return false, &applyError{err}
	}
	if err := e.k.consumer.Commit(e.next); err != nil {
		e.refused(err)
		return false, nil
	}
	e.committedNow(start, storeBytes)
	return true, nil
}

// offsetCommit is an at-least-once epoch whose records are sent and whose store writes are
// sealed, waiting in the background for LevelDB to apply them and for the acknowledgements
// of its other records before its offsets are committed. The goroutine sets err or refused
// before it closes done. An exactly-once epoch whose transaction committed uses done and
// err alone, while LevelDB applies its store writes (applyInBackground).
type offsetCommit struct {
	done chan struct{}
	// changelogAcked is closed once the epoch's changelog records are acknowledged (or
	// failed) and their offsets taken: the next epoch's may go from then on.
	changelogAcked chan struct{}
	// err: a record of the epoch failed, its acknowledgements did not come in time, or its
	// store writes were not applied (an *applyError).
	err     error
	refused error // the coordinator refused the offsets
	// deferred says dead letters of records the production handler skipped came in while it
	// waited: they go with the next epoch, and so do the offsets.
	deferred bool

	start               time.Time
	records, partitions int
	storeBytes          int64
}

// commitInBackground closes an at-least-once epoch without waiting for any
// acknowledgement or for LevelDB: its store writes are sealed and applied in the
// background once their changelog records are acknowledged, with those records' offsets;
// its consumed offsets are committed once the writes are applied and every record sent
// before now is acknowledged, dead letters included.
func (e *epoch) commitInBackground(start time.Time) (bool, error) {
	storeBytes := e.storeBytes()
	if err := e.sendChangelog(); err != nil {
		return false, err
	}
	// The offsets are committed only once these are acknowledged too.
	if _, err := e.sendLetters(); err != nil {
		return false, err
	}
	sealed := e.k.producer.Seal()
	c := &offsetCommit{done: make(chan struct{}), changelogAcked: make(chan struct{}),
		start: start, records: e.records, partitions: len(e.next), storeBytes: storeBytes}
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.KafkaWait())
	producer := e.k.producer
	// ackErr is set before changelogAcked is closed: a changelog record failed, or its
	// acknowledgement did not come in time.
	var ackErr error
	offsets := func() (map[state.ChangelogPartition]int64, error) {
		defer close(c.changelogAcked)
		if ackErr = sealed.WaitTracked(ctx); ackErr != nil {
			return nil, ackErr
		}
		// Nothing tracked was sent since the seal (sendChangelog holds the next epoch's
		// records until changelogAcked), so these are this epoch's offsets.
		return e.storeOffsets(producer.AckedOffsets()), nil
	}
	var applying *state.BackgroundCommit
	if e.db != nil {
		var err error
		if applying, err = e.db.CommitInBackground(offsets); err != nil {
			cancel()
			return false, &applyError{fmt.Errorf("apply the epoch's store writes: %w", err)}
		}
	}
	next, consumer := maps.Clone(e.next), e.k.consumer
	go func() {
		defer close(c.done)
		defer cancel()
		var err error
		if applying != nil {
			err = applying.Wait()
		} else {
			_, err = offsets()
		}
		switch {
		case ackErr != nil:
			c.err = ackErr
			return
		case err != nil:
			c.err = &applyError{fmt.Errorf("apply the epoch's store writes: %w", err)}
			return
		}
		if c.err = sealed.Wait(ctx); c.err != nil {
			return
		}
		if c.deferred = e.skipped.any(); c.deferred {
			return
		}
		c.refused = consumer.Commit(next)
	}()
	e.committing = c
	e.observe(start)
	e.closeEpoch()
	return true, nil
}

// committingDone is closed when the epoch committing in the background is done; nil when
// none is.
func (e *epoch) committingDone() <-chan struct{} {
	if e.committing == nil {
		return nil
	}
	return e.committing.done
}

// settle waits for the epoch committing in the background, if any, and reports how it
// went: the error of a record it sent (the loop drops the epoch it runs now, loop.retry:
// the consumer rewinds to before the failed one). An offset commit the coordinator refused
// is logged, as at the barrier.
func (e *epoch) settle() error {
	c := e.committing
	if c == nil {
		return nil
	}
	<-c.done
	e.committing = nil
	switch {
	case c.err != nil:
		return c.err
	case e.eos:
		// The transaction's commit counted the epoch.
	case c.deferred:
		e.dirty = true // the next barrier sends the letters and commits the offsets
	case c.refused != nil:
		e.refused(c.refused)
		e.dirty = true // as at the barrier, the next one commits the offsets again
	default:
		e.committed(c.records)
		e.debugCommitted(c.start, c.records, c.partitions, c.storeBytes)
	}
	return nil
}

// storeBytes is what the epoch buffered, for the debug log only.
func (e *epoch) storeBytes() int64 {
	if e.db == nil || !e.log.Enabled(context.Background(), slog.LevelDebug) {
		return 0
	}
	return e.db.UncommittedBytes()
}

// refused reports offsets the coordinator did not take.
func (e *epoch) refused(err error) {
	e.metrics.Commits.WithLabelValues(metrics.ResultFailure).Inc()
	e.log.Warn("offset commit failed; the records since the last commit will be read again after the rebalance", "err", err)
}

// committedNow counts, measures and closes the epoch the barrier that began at start
// committed.
func (e *epoch) committedNow(start time.Time, storeBytes int64) {
	e.committed(e.records)
	e.observe(start)
	e.debugCommitted(start, e.records, len(e.next), storeBytes)
	e.closeEpoch()
}

// committed counts a committed epoch of records.
func (e *epoch) committed(records int) {
	e.failed = 0
	e.metrics.Commits.WithLabelValues(metrics.ResultSuccess).Inc()
	e.metrics.EpochSize.Observe(float64(records))
}

// observe measures the barrier that began at start, as long as it held up the loop.
func (e *epoch) observe(start time.Time) {
	e.metrics.CommitLatency.Observe(time.Since(start).Seconds())
}

// debugCommitted logs a committed epoch of records whose barrier began at start.
func (e *epoch) debugCommitted(start time.Time, records, partitions int, storeBytes int64) {
	if e.log.Enabled(context.Background(), slog.LevelDebug) {
		e.log.Debug("epoch committed", "records", records, "store bytes", storeBytes,
			"partitions", partitions, "took", time.Since(start).Round(time.Microsecond))
	}
}

// closeEpoch starts the next epoch after a commit.
func (e *epoch) closeEpoch() {
	e.dirty = false
	e.records = 0
}

// commitTxn commits an exactly-once epoch: its transaction, then its store writes, in the
// background unless wait says otherwise.
func (e *epoch) commitTxn(start time.Time, wait bool) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.KafkaWait())
	defer cancel()
	storeBytes := e.storeBytes()
	if err := e.begin(); err != nil {
		return false, err
	}
	if err := e.sendChangelog(); err != nil {
		return false, err
	}
	if err := e.k.producer.CommitTxnInGroup(ctx, e.next, e.k.consumer.GroupMetadata()); err != nil {
		return false, err
	}
	e.inTxn = false
	apply := e.applyInBackground
	if wait {
		apply = e.applyState
	}
	if err := apply(); err != nil {
		return false, &applyError{err}
	}
	e.committedNow(start, storeBytes)
	return true, nil
}

// applyState writes the epoch's store buffer to LevelDB with the changelog offsets.
func (e *epoch) applyState() error {
	offsets := e.storeOffsets(e.k.producer.AckedOffsets())
	if e.db == nil {
		return nil
	}
	if err := e.db.Commit(offsets); err != nil {
		return fmt.Errorf("apply the epoch's store writes: %w", err)
	}
	return nil
}

// applyInBackground seals the store buffer of an exactly-once epoch whose transaction
// committed and writes it to LevelDB in the background, with the changelog offsets the
// transaction's records were acknowledged at; settle reports how the write went.
func (e *epoch) applyInBackground() error {
	offsets := e.storeOffsets(e.k.producer.AckedOffsets())
	if e.db == nil {
		return nil
	}
	applying, err := e.db.CommitInBackground(func() (map[state.ChangelogPartition]int64, error) { return offsets, nil })
	if err != nil {
		return fmt.Errorf("apply the epoch's store writes: %w", err)
	}
	c := &offsetCommit{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		if err := applying.Wait(); err != nil {
			c.err = &applyError{fmt.Errorf("apply the epoch's store writes: %w", err)}
		}
	}()
	e.committing = c
	return nil
}

// storeOffsets are the acknowledged changelog offsets by store partition.
func (e *epoch) storeOffsets(acked map[pipeline.TopicPartition]int64) map[state.ChangelogPartition]int64 {
	offsets := make(map[state.ChangelogPartition]int64, len(acked))
	for tp, off := range acked {
		if store, ok := e.changelogOf[tp.Topic]; ok {
			offsets[state.ChangelogPartition{Store: store, Partition: tp.Partition}] = off
		}
	}
	return offsets
}

// maxFailedEpochs bounds how many epochs in a row may fail and be processed again before
// the application stops: a broker away for longer is an outage to report, not to hide.
const maxFailedEpochs = 20

// fail handles an epoch that failed for a reason other than a corrupt state database. A
// failed transaction (exactly-once) or a record the broker did not take for a retriable
// reason (a lost connection, a leader change) is Kafka Streams' TaskCorruptedException: the
// epoch is dropped (the transaction aborted, the store buffer discarded) and fail returns
// nil: the loop goes on from the committed offsets (loop.resumeFromCommitted), so the
// epoch's records are processed again — once more under at-least-once, exactly once under
// exactly-once. A fenced producer is its TaskMigratedException (rejoin), reported by
// rejoined. Anything else (a script error, a record the broker refuses) is returned: it
// stops the application; a record that failed under a LogAndFail handler first goes to the
// dead-letter topic, if one is set.
func (e *epoch) fail(cause error) (rejoined bool, err error) {
	e.metrics.Commits.WithLabelValues(metrics.ResultFailure).Inc()
	// A refused record fails the same way in every replay; other failures of an open
	// transaction (a lost broker, a timed-out commit) may pass when the epoch is redone.
	fenced := errors.Is(cause, kafkaio.ErrFenced)
	var pe *kafkaio.ProduceError
	// A transaction that could not begin because its coordinator was away (a new epoch
	// could not be had in time) is retried as a failed one is.
	retriable := fenced || e.eos && (e.inTxn || errors.Is(cause, kafkaio.ErrTimeout)) && !errors.As(cause, new(*pipeline.RecordError))
	if !fenced && errors.As(cause, &pe) {
		retriable = pe.Retriable()
	}
	if !retriable {
		e.abortAfterFailure()
		if !e.eos || !e.k.producer.Fenced() {
			e.writeFailedDeadLetter(cause)
			return false, cause
		}
		// The abort found the producer fenced: the failure came from the fencing though
		// its error did not say so (a send error raised through a Lua callback keeps only
		// its message). A script error that is one recurs when the epoch is processed again.
	}
	if e.failed++; e.failed > maxFailedEpochs {
		if retriable {
			e.abortAfterFailure()
		}
		return false, fmt.Errorf("%d epochs in a row failed; the last: %w", e.failed, cause)
	}
	if fenced || !retriable {
		return true, e.rejoin(cause, !retriable)
	}
	e.log.Warn("dropping the epoch; the records since the last commit will be processed again", "err", cause)
	if err := e.abort(); err != nil {
		if errors.Is(err, kafkaio.ErrFenced) {
			// The abort learnt that the producer was fenced; the epoch is dropped.
			return true, e.rejoin(errors.Join(cause, err), true)
		}
		return false, errors.Join(cause, err)
	}
	return false, nil
}

// abort aborts the open transaction (or, under at-least-once, waits out the records in
// flight) and drops the epoch's store writes.
func (e *epoch) abort() error {
	var err error
	if e.inTxn {
		err = e.k.producer.AbortTxn()
		e.inTxn = false
		if errors.Is(err, kafkaio.ErrTxnAbandoned) {
			// It never commits; the coordinator aborts it, at the latest with the next
			// transaction's new producer epoch.
			e.log.Warn("the abort did not reach the transaction coordinator; the transaction is abandoned and the coordinator aborts it", "err", err)
			err = nil
		}
	}
	if !e.eos {
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.KafkaWait())
		_ = e.k.producer.Flush(ctx) // its error is the one being handled
		cancel()
		// The epoch committing in the background is done too: its offsets are committed if
		// its records were acknowledged; either way the consumer rewinds to what is.
		_ = e.settle()
		e.dropSkipped()
	} else if c := e.committing; c != nil {
		// The epoch before committed its transaction; db.Abort keeps its store writes once
		// they are written. One that failed is dropped with this epoch's: only a rebuild or
		// a stop comes here without loop.retry settling it first, and both restore it from
		// the changelog.
		<-c.done
		e.committing = nil
	}
	e.k.producer.AckedOffsets()
	if e.db != nil {
		e.db.Abort()
		// A corrupt database is not restored into: it is rebuilt (staterebuild.go).
		if !e.cfg.TransactionalStateStores && e.db.Corruption() == nil {
			err = errors.Join(err, e.restore())
		}
	}
	clear(e.next)
	e.dirty = false
	e.records = 0
	return err
}

// abortAfterFailure leaves nothing of a failed epoch behind before the application stops.
func (e *epoch) abortAfterFailure() {
	if !e.eos {
		return
	}
	if err := e.abort(); err != nil {
		e.log.Warn("abort after failure", "err", err)
	}
}
