package agent

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/internal/kfaketest"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
	"github.com/stoatflow/stoatflow/state/faultdisk"
)

// epochRig is an epoch as the loop runs it, on a kfake cluster the test can fault: the
// agent's producer, a consumer in a generation that owns in-0, and a state database with
// the logged store "counts". The output topic and the changelog have different leaders, so
// that holding the requests of one holds nothing of the other (a broker answers the
// requests of a connection in order).
type epochRig struct {
	cluster   *kfake.Cluster
	brokers   []string
	cfg       *config.Config
	m         *metrics.Metrics
	k         *kafkaClients
	disk      *faultdisk.Disk
	gate      *faultdisk.Gate // holds LevelDB's writes while closed
	db        *state.DB
	store     *state.KeyValueStore
	epoch     *epoch
	changelog string
	restores  int // calls of the epoch's restore
}

var (
	epochIn      = pipeline.TopicPartition{Topic: "in", Partition: 0}
	epochCounts  = pipeline.StoreSpec{Name: "counts", Type: pipeline.KeyValueStoreType, Logged: true}
	epochSources = map[string]int32{"in": 1}
)

func newEpochRig(t *testing.T, extra string) *epochRig {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(1, "in", "out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	r := &epochRig{cluster: cluster, brokers: cluster.ListenAddrs(), m: metrics.New()}
	r.cfg = testConfig(t, r.brokers, countScript, "producer.retries = 1\n"+extra)
	r.changelog = pipeline.ChangelogTopic(r.cfg.ApplicationID, epochCounts.Name)
	if err := kafkaio.EnsureTopics(r.brokers, saramaTestConfig(), map[string]kafkaio.TopicSpec{r.changelog: {Partitions: 1, ReplicationFactor: -1}}); err != nil {
		t.Fatal(err)
	}
	if err := cluster.MoveTopicPartition("out", 0, 1-cluster.LeaderFor(r.changelog, 0)); err != nil {
		t.Fatal(err)
	}
	pc, err := kafkaio.SaramaConfig(r.cfg, kafkaio.RoleProducer)
	if err != nil {
		t.Fatal(err)
	}
	if r.cfg.ExactlyOnce() {
		kafkaio.MakeTransactional(pc, r.cfg, "")
	}
	p, err := kafkaio.NewProducer(r.brokers, pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	r.k = &kafkaClients{brokers: r.brokers, producer: p, sourcePartitions: epochSources}

	dbDir := filepath.Join(t.TempDir(), "db")
	r.disk, r.gate = faultdisk.New(dbDir), &faultdisk.Gate{}
	r.db, err = state.Open(dbDir, state.Options{WrapStorage: func(s storage.Storage) storage.Storage { return r.gate.Wrap(r.disk.Wrap(s)) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.gate.Reopen(); _ = r.db.Close() })
	if r.store, err = r.db.KeyValueStore(epochCounts, 0); err != nil {
		t.Fatal(err)
	}
	a := &Agent{cfg: r.cfg, log: slog.New(slog.NewTextHandler(&lockedBuffer{}, nil)), metrics: r.m}
	r.epoch = newEpoch(a, r.k, r.db, []pipeline.StoreSpec{epochCounts})
	r.epoch.sendLetter = func(d *deadLetter) error {
		return p.Send(r.cfg.DeadLetterQueueTopic(), -1, d.key, d.value, d.headers, d.timestamp, nil)
	}
	r.epoch.restore = func() error { r.restores++; return nil }

	cc, err := kafkaio.SaramaConfig(r.cfg, kafkaio.RoleConsumer)
	if err != nil {
		t.Fatal(err)
	}
	assigned := make(chan []pipeline.TopicPartition, 8)
	c, err := kafkaio.NewConsumer(r.brokers, r.cfg.ApplicationID, []string{"in"}, cc, 100, rebalanceFuncs{assigned: assigned})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); _ = c.Close(true) })
	c.Start(ctx)
	select {
	case <-assigned:
	case <-time.After(30 * time.Second):
		t.Fatal("the consumer was assigned nothing")
	}
	r.k.consumer = c
	return r
}

// rebalanceFuncs is a kafkaio.RebalanceHandler that reports each assignment.
type rebalanceFuncs struct {
	assigned chan<- []pipeline.TopicPartition
}

func (h rebalanceFuncs) Assigned(tps []pipeline.TopicPartition) { h.assigned <- tps }
func (rebalanceFuncs) Revoking([]pipeline.TopicPartition)       {}

// process is what the loop does for one consumed record of in-0 at offset: a store write of
// key and an output of key, both in the epoch.
func (r *epochRig) process(t *testing.T, offset int64, key string) {
	t.Helper()
	if err := r.epoch.begin(); err != nil {
		t.Fatal(err)
	}
	if err := r.store.Put([]byte(key), []byte("v"), 1); err != nil {
		t.Fatal(err)
	}
	if err := r.k.producer.Send("out", 0, []byte(key), []byte(key), nil, 1, nil); err != nil {
		t.Fatal(err)
	}
	r.epoch.consumed(epochIn, offset+1, 1)
}

// committedOffset is the group's committed offset of in-0, -1 for none.
func (r *epochRig) committedOffset(t *testing.T) int64 {
	t.Helper()
	return groupOffset(t, r.brokers, r.cfg.ApplicationID, epochIn)
}

// groupOffset is group's committed offset of tp, -1 for none.
func groupOffset(t *testing.T, brokers []string, group string, tp pipeline.TopicPartition) int64 {
	t.Helper()
	admin, err := sarama.NewClusterAdmin(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{tp.Topic: {tp.Partition}})
	if err != nil {
		t.Fatal(err)
	}
	b := resp.GetBlock(tp.Topic, tp.Partition)
	if b == nil {
		return -1
	}
	return b.Offset
}

// stored is what the database holds for key, committed.
func (r *epochRig) stored(t *testing.T, key string) string {
	t.Helper()
	return r.read(t, state.ReadCommitted, key)
}

// read is what a read of key at level finds.
func (r *epochRig) read(t *testing.T, level state.IsolationLevel, key string) string {
	t.Helper()
	v, err := r.store.View(level).Get([]byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

func (r *epochRig) failures() float64 {
	return testutil.ToFloat64(r.m.Commits.WithLabelValues(metrics.ResultFailure))
}

// Under at-least-once the barrier commits the consumed offsets after the outputs and the
// changelog records are acknowledged and the store writes applied, with the changelog offset.
func TestEpochAtLeastOnceCommitsOffsetsAfterOutputsAndState(t *testing.T) {
	r := newEpochRig(t, "")
	r.process(t, 4, "a")
	committed, err := r.epoch.commit(time.Now(), true)
	if err != nil || !committed {
		t.Fatalf("commit = %v, %v; want committed", committed, err)
	}
	if got := r.committedOffset(t); got != 5 {
		t.Fatalf("committed offset %d, want 5", got)
	}
	if got := r.stored(t, "a"); got != "v" {
		t.Fatalf("store holds %q, want the epoch's write", got)
	}
	if off, ok, err := r.db.ChangelogOffset(epochCounts.Name, 0); err != nil || !ok || off != 0 {
		t.Fatalf("changelog offset %d, %v, %v; want 0 (the write's record)", off, ok, err)
	}
	if len(readAll(t, r.brokers, r.changelog, 1)) != 1 || len(readAll(t, r.brokers, "out", 1)) != 1 {
		t.Fatal("want one changelog record and one output")
	}
	if r.epoch.open() {
		t.Fatal("the epoch is open after its commit")
	}
}

// A record the broker did not take for a retriable reason drops the epoch: no offset is
// committed, the store writes are dropped (and, with non-transactional stores, the stores
// restored), and the loop goes on from the committed offsets.
func TestEpochRetriableProduceErrorDropsTheEpoch(t *testing.T) {
	r := newEpochRig(t, "")
	r.process(t, 4, "a")
	f := r.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: r.changelog, Err: kerr.NotLeaderForPartition, Count: -1})
	_, err := r.epoch.commit(time.Now(), true)
	f.Remove()
	var pe *kafkaio.ProduceError
	if !errors.As(err, &pe) || !pe.Retriable() {
		t.Fatalf("commit = %v, want a retriable produce error", err)
	}
	rejoined, err := r.epoch.fail(err)
	if err != nil || rejoined {
		t.Fatalf("fail = %v, %v; want the epoch dropped, no rejoin", rejoined, err)
	}
	if got := r.committedOffset(t); got != -1 {
		t.Fatalf("committed offset %d after a dropped epoch, want none", got)
	}
	if got := r.stored(t, "a"); got != "" {
		t.Fatalf("store holds %q after a dropped epoch", got)
	}
	if r.epoch.open() || len(r.epoch.next) != 0 || r.restores != 1 {
		t.Fatalf("after the drop: open %v, offsets %v, restores %d; want closed, none, 1", r.epoch.open(), r.epoch.next, r.restores)
	}
	if r.failures() != 1 {
		t.Fatalf("%v failed commits, want 1", r.failures())
	}
	// The next epoch commits.
	r.process(t, 4, "a")
	if committed, err := r.epoch.commit(time.Now(), true); err != nil || !committed {
		t.Fatalf("commit after the drop = %v, %v", committed, err)
	}
	if got := r.committedOffset(t); got != 5 {
		t.Fatalf("committed offset %d, want 5", got)
	}
}

// A record the broker refuses for good stops the application, with nothing committed.
func TestEpochRefusedRecordStops(t *testing.T) {
	r := newEpochRig(t, "")
	r.process(t, 4, "a")
	f := r.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out", Err: kerr.TopicAuthorizationFailed, Count: -1})
	defer f.Remove()
	_, cause := r.epoch.commit(time.Now(), true)
	if !errors.Is(cause, sarama.ErrTopicAuthorizationFailed) {
		t.Fatalf("commit = %v, want the refusal", cause)
	}
	if rejoined, err := r.epoch.fail(cause); err != cause || rejoined {
		t.Fatalf("fail = %v, %v; want the cause, to stop", rejoined, err)
	}
	if got := r.committedOffset(t); got != -1 {
		t.Fatalf("committed offset %d, want none", got)
	}
}

// An epoch that failed maxFailedEpochs times in a row and once more stops the application;
// a committed epoch starts the count again.
func TestEpochStopsAfterTooManyFailedEpochs(t *testing.T) {
	r := newEpochRig(t, "")
	retriable := &kafkaio.ProduceError{Topic: "out", Err: sarama.ErrNotLeaderForPartition}
	failN := func(n int) error {
		for range n {
			if _, err := r.epoch.fail(retriable); err != nil {
				return err
			}
		}
		return nil
	}
	if err := failN(maxFailedEpochs); err != nil {
		t.Fatalf("failed epoch %v stopped the application", err)
	}
	r.process(t, 0, "a")
	if committed, err := r.epoch.commit(time.Now(), true); err != nil || !committed {
		t.Fatalf("commit = %v, %v", committed, err)
	}
	if err := failN(maxFailedEpochs); err != nil {
		t.Fatalf("the count did not start again after a commit: %v", err)
	}
	err := failN(1)
	if !errors.Is(err, retriable) || !strings.Contains(err.Error(), "21 epochs in a row failed") {
		t.Fatalf("fail = %v, want the application stopped after 21 failed epochs", err)
	}
}

// A store write that fails after the outputs were acknowledged (the disk is full) is an
// *applyError under at-least-once, and the offsets stay uncommitted: the epoch's records
// are processed again after the restart.
func TestEpochAtLeastOnceStateApplyErrorCommitsNoOffset(t *testing.T) {
	r := newEpochRig(t, "")
	r.process(t, 4, "a")
	r.disk.Fill(0)
	_, err := r.epoch.commit(time.Now(), true)
	var apply *applyError
	if !errors.As(err, &apply) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("commit = %v, want an applyError with ENOSPC", err)
	}
	if got := r.committedOffset(t); got != -1 {
		t.Fatalf("committed offset %d after a failed store write, want none", got)
	}
	if len(readAll(t, r.brokers, "out", 1)) != 1 {
		t.Fatal("the output was not sent before the store write")
	}
}

// Under at-least-once the barrier does not wait for LevelDB either: on a full disk it still
// hands the epoch to the background, whose store write fails; the offsets are never
// committed, and settle reports the failure as the database's (an applyError with ENOSPC).
func TestEpochAtLeastOnceBackgroundStateApplyErrorCommitsNoOffset(t *testing.T) {
	r := newEpochRig(t, "")
	r.process(t, 4, "a")
	r.disk.Fill(0)
	committed, err := r.epoch.commit(time.Now(), false)
	if err != nil || !committed {
		t.Fatalf("commit = %v, %v; want the epoch handed to the background", committed, err)
	}
	<-r.epoch.committingDone()
	err = r.epoch.settle()
	var apply *applyError
	if !errors.As(err, &apply) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("settle = %v, want an applyError with ENOSPC", err)
	}
	if got := r.committedOffset(t); got != -1 {
		t.Fatalf("committed offset %d after a failed store write, want none", got)
	}
	if len(readAll(t, r.brokers, "out", 1)) != 1 {
		t.Fatal("the output was not sent")
	}
}

// Under at-least-once a barrier that need not wait hands the offsets to the background: it
// returns while an output is unacknowledged, with the store writes applied with their
// acknowledged changelog offset, and the offsets are committed only once the output is
// acknowledged.
func TestEpochAtLeastOnceCommitsOffsetsAfterTheAcksInTheBackground(t *testing.T) {
	r := newEpochRig(t, "")
	release, held := kfaketest.HoldProduce(r.cluster, "out")
	t.Cleanup(release)
	r.process(t, 4, "a")
	<-held
	committed, err := r.epoch.commit(time.Now(), false)
	if err != nil || !committed {
		t.Fatalf("commit = %v, %v; want the epoch handed to the background", committed, err)
	}
	if r.epoch.open() || r.epoch.committingDone() == nil {
		t.Fatal("want the epoch closed and its offsets committing")
	}
	if got := r.committedOffset(t); got != -1 {
		t.Fatalf("offset %d committed while the output is unacknowledged", got)
	}
	// LevelDB applies the store writes in the background too, with their changelog offset.
	pollFor(t, 10*time.Second, "the epoch's store writes applied", func() bool { return r.stored(t, "a") == "v" })
	if off, ok, err := r.db.ChangelogOffset(epochCounts.Name, 0); err != nil || !ok || off != 0 {
		t.Fatalf("changelog offset %d, %v, %v; want 0 (the write's record)", off, ok, err)
	}
	if got := r.committedOffset(t); got != -1 {
		t.Fatalf("offset %d committed while the output is unacknowledged", got)
	}
	release()
	<-r.epoch.committingDone()
	if err := r.epoch.settle(); err != nil {
		t.Fatal(err)
	}
	if got := r.committedOffset(t); got != 5 {
		t.Fatalf("committed offset %d after the acks, want 5", got)
	}
	if got := testutil.ToFloat64(r.m.Commits.WithLabelValues(metrics.ResultSuccess)); got != 1 {
		t.Fatalf("%v successful commits, want 1", got)
	}
}

// A record that fails after its barrier handed the epoch to the background is reported by
// settle and drops the epoch as at the barrier: its offsets are never committed.
func TestEpochAtLeastOnceBackgroundFailureDropsTheEpoch(t *testing.T) {
	r := newEpochRig(t, "")
	f := r.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "out", Err: kerr.NotLeaderForPartition, Count: -1})
	r.process(t, 4, "a")
	if committed, err := r.epoch.commit(time.Now(), false); err != nil || !committed {
		t.Fatalf("commit = %v, %v", committed, err)
	}
	<-r.epoch.committingDone()
	cause := r.epoch.settle()
	f.Remove()
	var pe *kafkaio.ProduceError
	if !errors.As(cause, &pe) || !pe.Retriable() {
		t.Fatalf("settle = %v, want the retriable produce error", cause)
	}
	if rejoined, err := r.epoch.fail(cause); err != nil || rejoined {
		t.Fatalf("fail = %v, %v; want the epoch dropped", rejoined, err)
	}
	if got := r.committedOffset(t); got != -1 {
		t.Fatalf("committed offset %d of an epoch whose output failed", got)
	}
	r.process(t, 4, "a")
	if committed, err := r.epoch.commit(time.Now(), true); err != nil || !committed {
		t.Fatalf("commit after the drop = %v, %v", committed, err)
	}
	if got := r.committedOffset(t); got != 5 {
		t.Fatalf("committed offset %d, want 5", got)
	}
}

// The store writes of an at-least-once epoch wait for their changelog records, in the
// background: while the broker holds the changelog, the barrier returns, LevelDB holds
// neither the write nor an offset, no consumer offset is committed, and the next epoch's
// changelog records are held back (the sealed epoch's changelog offsets are the highest
// acknowledged, which must not cover them). Once released, the write is applied with its
// record's offset and the consumed offsets are committed.
func TestEpochAtLeastOnceAppliesTheStateAfterItsChangelogAcks(t *testing.T) {
	r := newEpochRig(t, "")
	release, held := kfaketest.HoldProduce(r.cluster, r.changelog)
	defer release()
	r.process(t, 4, "a")
	if err := r.epoch.sendChangelog(); err != nil {
		t.Fatal(err)
	}
	<-held
	if committed, err := r.epoch.commit(time.Now(), false); err != nil || !committed {
		t.Fatalf("commit = %v, %v while the changelog is held; want the epoch handed to the background", committed, err)
	}
	r.process(t, 5, "b")
	if err := r.epoch.sendChangelog(); err != nil {
		t.Fatal(err)
	}
	if got := r.stored(t, "a"); got != "" {
		t.Fatalf("store holds %q while its changelog record is unacknowledged", got)
	}
	if _, ok, err := r.db.ChangelogOffset(epochCounts.Name, 0); err != nil || ok {
		t.Fatalf("a changelog offset is claimed (%v, %v) while its record is unacknowledged", ok, err)
	}
	if got := r.committedOffset(t); got != -1 {
		t.Fatalf("offset %d committed while the changelog is unacknowledged", got)
	}
	if recs := r.db.TakeChangelog(); len(recs) != 1 || string(recs[0].Key) != "b" {
		t.Fatalf("untaken changelog records %v, want the next epoch's b held back", recs)
	}
	release()
	<-r.epoch.committingDone()
	if err := r.epoch.settle(); err != nil {
		t.Fatal(err)
	}
	if off, ok, err := r.db.ChangelogOffset(epochCounts.Name, 0); err != nil || !ok || off != 0 {
		t.Fatalf("changelog offset %d, %v, %v; want 0", off, ok, err)
	}
	if got := r.stored(t, "a"); got != "v" {
		t.Fatalf("store holds %q, want the epoch's write applied", got)
	}
	if got := r.committedOffset(t); got != 5 {
		t.Fatalf("committed offset %d, want 5", got)
	}
}
