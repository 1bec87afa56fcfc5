package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// openState opens the application's state database. A database LevelDB finds corrupt is
// deleted and rebuilt from the changelogs (counted in the restore metrics), never used.
func (a *Agent) openState(dir string) (*state.DB, error) {
	db, err := state.Open(dir, a.stateOptions())
	if errors.Is(err, state.ErrCorrupt) {
		return a.replaceState(nil, dir, "start", err)
	}
	if err != nil {
		return nil, fmt.Errorf("state database %s: %w", dir, err)
	}
	return db, nil
}

func (a *Agent) stateOptions() state.Options {
	o := a.opts.State
	o.CacheBytes = state.DefaultCacheBytes
	o.Logger = a.log
	// A store write whose changelog record the producer would refuse fails the record that
	// made it, as a processing error its handler and the dead-letter queue see, instead of
	// failing the epoch when the record is sent: that would stop the agent after every
	// restart, whatever the handlers say.
	maxBytes := int(config.MaxRequestSize.Get(a.cfg.Client(config.ForProducer)))
	o.CheckChange = func(keyLen, valueLen int, headers pipeline.Headers) error {
		return kafkaio.RecordTooLarge(keyLen, valueLen, headers, maxBytes)
	}
	return o
}

// replaceState deletes a corrupt state database (closing it first, when open) and opens an
// empty one in its place, for the caller to restore. when ("start" or "running") labels
// the rebuild metric.
func (a *Agent) replaceState(old *state.DB, dir, when string, cause error) (*state.DB, error) {
	a.log.Error("the state database is corrupt; deleting it and restoring every store from its changelog",
		"dir", dir, "found", when, "err", cause)
	a.metrics.StateRebuilds.WithLabelValues(when).Inc()
	if old != nil {
		if err := old.Close(); err != nil {
			a.log.Warn("close the corrupt state database", "err", err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("remove corrupt state %s: %w", dir, err)
	}
	db, err := state.Open(dir, a.stateOptions())
	if err != nil {
		return nil, fmt.Errorf("state database %s: %w", dir, err)
	}
	return db, nil
}

// rebuildState replaces a corrupt state database and restores every store into the new
// one. Found corrupt again at once, the new one is an error: a disk that damages what was
// just written is an outage that rebuilding cannot fix.
func (a *Agent) rebuildState(ctx context.Context, old *state.DB, dir string, b *pipeline.StreamsBuilder, k *kafkaClients, when string, cause error) (*state.DB, error) {
	db, err := a.replaceState(old, dir, when, cause)
	if err != nil {
		return nil, err
	}
	if err := a.restore(ctx, db, b, k, k.maxPartitions(), nil); err != nil {
		db.Close()
		if errors.Is(err, state.ErrCorrupt) {
			return nil, fmt.Errorf("the state database was corrupt again right after it was rebuilt (is the disk failing?): %w", err)
		}
		return nil, err
	}
	return db, nil
}

// openRestoredState opens the state database and restores every logged store from its
// changelog. In a streams group it restores none: as Kafka Streams, the agent restores the
// stores of the tasks the group gives it as it takes them (takeTasks); it only reads the
// changelog offset of every store partition, which a restore reads first, so that damage
// there is found at start, as in the classic mode. A database the restore, or that reading,
// finds corrupt (damage goleveldb reports only when a read reaches it) is rebuilt.
func (a *Agent) openRestoredState(ctx context.Context, dir string, b *pipeline.StreamsBuilder, k *kafkaClients) (*state.DB, error) {
	db, err := a.openState(dir)
	if err != nil {
		return nil, err
	}
	if a.streamsGroup() {
		err = changelogOffsets(db, b.Stores(), k.maxPartitions())
	} else {
		a.log.Info("restoring state stores from their changelogs")
		err = a.restore(ctx, db, b, k, k.maxPartitions(), nil)
	}
	if errors.Is(err, state.ErrCorrupt) {
		return a.rebuildState(ctx, db, dir, b, k, "start", err)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// forgetEmbeddedState deletes the state a previous run left behind when the broker is the
// embedded one: that broker starts empty every time, so the stores' changelog offsets name
// records it never had, and restoring would wipe every store partition anyway, with a
// warning each.
func (a *Agent) forgetEmbeddedState(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	a.log.Info("the embedded broker starts empty, so the stores do too: deleted the state of the last run", "dir", dir)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("delete the state of the last run %s: %w", dir, err)
	}
	return nil
}

// changelogOffsets reads the changelog offset each logged store partition was committed
// with.
func changelogOffsets(db *state.DB, stores []pipeline.StoreSpec, partitions int32) error {
	for _, spec := range stores {
		if !spec.Logged {
			continue
		}
		for p := range partitions {
			if _, _, err := db.ChangelogOffset(spec.Name, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// restoreLogInterval is how often a restoration in progress is logged.
const restoreLogInterval = 5 * time.Second

// changelogRead is one store partition to replay: its changelog from offset from to end.
type changelogRead struct {
	store     string
	spec      pipeline.StoreSpec
	topic     string
	partition int32
	from, end int64
}

// restore brings every logged store partition up to the end of its changelog, replaying only
// the records after the offset the store has applied (KIP-1035); scope narrows it to some
// store partitions (nil: every one). Its progress is logged every few seconds and shown in
// /readyz's body and the console.
//
// A restore that fails for want of the cluster (kafkaio.ErrTimeout: no broker answers, a
// leader just elected serves no offsets yet, a changelog's last committed transaction is
// still being completed) goes on from where it stopped, for up to request.timeout.ms plus
// task.timeout.ms, as Kafka Streams bounds retriable failures by task.timeout.ms.
func (a *Agent) restore(ctx context.Context, db *state.DB, b *pipeline.StreamsBuilder, k *kafkaClients, partitions int32, scope *readScope) error {
	return a.retryKafka(ctx, "restoring the stores", func() error { return a.restoreOnce(ctx, db, b, k, partitions, scope) })
}

// kafkaRetryBackoff is the wait before a step that failed for want of the cluster is tried
// again: Java's retry.backoff.max.ms.
const kafkaRetryBackoff = time.Second

// retryKafka runs step until it succeeds or fails with an error other than
// kafkaio.ErrTimeout, for up to request.timeout.ms plus task.timeout.ms (KafkaWait), logging
// each failure it tries again after.
func (a *Agent) retryKafka(ctx context.Context, what string, step func() error) error {
	deadline := time.Now().Add(a.cfg.KafkaWait())
	for {
		err := step()
		if err == nil || !errors.Is(err, kafkaio.ErrTimeout) || time.Now().Add(kafkaRetryBackoff).After(deadline) {
			return err
		}
		a.log.Warn(what+" failed; trying again", "err", err)
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(kafkaRetryBackoff):
		}
	}
}

// changelogsStable fails with kafkaio.ErrTimeout while a changelog is stable (its last
// stable offset, what a read_committed restore reads up to) only below records the store
// has applied: the transaction that committed them is still being completed.
func (a *Agent) changelogsStable(ctx context.Context, db *state.DB, b *pipeline.StreamsBuilder, k *kafkaClients, partitions int32) error {
	tr, err := a.changelogReader(k)
	if err != nil {
		return err
	}
	defer tr.Close()
	_, err = a.changelogReads(ctx, db, b, tr, partitions, nil)
	return err
}

func (a *Agent) changelogReader(k *kafkaClients) (*kafkaio.TopicReader, error) {
	cfg, err := kafkaio.SaramaConfig(a.cfg, kafkaio.RoleConsumer)
	if err != nil {
		return nil, err
	}
	tr, err := kafkaio.NewTopicReader(k.brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	return tr, nil
}

// restoreOnce is one try of restore.
func (a *Agent) restoreOnce(ctx context.Context, db *state.DB, b *pipeline.StreamsBuilder, k *kafkaClients, partitions int32, scope *readScope) error {
	tr, err := a.changelogReader(k)
	if err != nil {
		return err
	}
	defer tr.Close()
	reads, err := a.changelogReads(ctx, db, b, tr, partitions, scope)
	if err != nil {
		return err
	}
	var total int64
	for _, r := range reads {
		total += max(r.end-r.from, 0)
	}
	end := a.restores.Begin(total, a.log, restoreLogInterval)
	defer end()
	for _, r := range reads {
		if r.from >= r.end {
			a.log.Debug("restore: store partition is up to date with its changelog", "store", r.store, "partition", r.partition, "changelog end", r.end)
			continue
		}
		a.log.Debug("restore: replaying the changelog into the store partition", "store", r.store, "partition", r.partition,
			"from", r.from, "changelog end", r.end)
		a.restores.At(r.store, r.partition)
		start := time.Now()
		next := r.from
		n, last, err := a.replay(ctx, db, tr, r, nil, func(batch int, lastOffset int64) {
			a.restores.Advance(int64(batch), lastOffset+1-next)
			// A batch restored is a step of the loop when it rebuilds the state.
			a.progress.step(time.Now())
			next = lastOffset + 1
		})
		if err != nil {
			return fmt.Errorf("restore store %s partition %d from %s: %w", r.store, r.partition, r.topic, err)
		}
		if n > 0 {
			a.log.Info("restored store partition from its changelog", "store", r.store, "partition", r.partition,
				"records", n, "from", r.from, "to", last, "took", time.Since(start).Round(time.Millisecond))
		}
	}
	return nil
}

// replay reads r's changelog from r.from to its end into db, calling batch after each
// batch it applied. It returns how many records it applied and the offset of the last.
// scope's write applies each batch (nil: at once).
func (a *Agent) replay(ctx context.Context, db *state.DB, tr *kafkaio.TopicReader, r changelogRead, scope *readScope, batch func(n int, lastOffset int64)) (int, int64, error) {
	restored := a.metrics.RecordsRestored.WithLabelValues(r.store)
	n := 0
	last, err := tr.ReadToEnd(ctx, r.topic, r.partition, r.from, func(msgs []pipeline.SourceRecord) error {
		recs := make([]state.ChangelogRecord, len(msgs))
		for i, m := range msgs {
			recs[i] = state.ChangelogRecord{Store: r.store, Partition: r.partition, Key: m.Key, Value: m.Value, Timestamp: m.Timestamp, Headers: m.Headers}
		}
		lastOffset := msgs[len(msgs)-1].Offset
		if err := scope.write(func() error { return db.Restore(r.spec, r.partition, recs, lastOffset) }); err != nil {
			return err
		}
		n += len(msgs)
		restored.Add(float64(len(msgs)))
		batch(len(msgs), lastOffset)
		return nil
	})
	return n, last, err
}

// changelogReads finds, for every logged store partition, what of its changelog to replay.
// A store partition ahead of its changelog is wiped and replayed whole. One that has
// applied records below the changelog's high-water mark but beyond its last stable offset
// is an error wrapping kafkaio.ErrTimeout: the transaction that committed them has not
// written its commit markers yet (its coordinator is moving), and a restore to the last
// stable offset would leave them out while the consumer's committed offsets, stable only
// once the markers are written, already count them.
//
// scope narrows the reads to some store partitions; nil reads every one.
func (a *Agent) changelogReads(ctx context.Context, db *state.DB, b *pipeline.StreamsBuilder, tr *kafkaio.TopicReader, partitions int32, scope *readScope) ([]changelogRead, error) {
	var reads []changelogRead
	for _, spec := range b.Stores() {
		if !spec.Logged {
			continue
		}
		name := spec.Name
		// At zero from the start, so a restore shows as an increase of a series that exists.
		a.metrics.RecordsRestored.WithLabelValues(name)
		topic := pipeline.ChangelogTopic(a.cfg.ApplicationID, name)
		var tps []pipeline.TopicPartition
		for p := range partitions {
			if scope.wants(state.ChangelogPartition{Store: name, Partition: p}) {
				tps = append(tps, pipeline.TopicPartition{Topic: topic, Partition: p})
			}
		}
		if len(tps) == 0 {
			continue
		}
		ends, err := tr.EndOffsets(ctx, tps)
		if err != nil {
			return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
		}
		var hwms map[pipeline.TopicPartition]int64
		for _, tp := range tps {
			p := tp.Partition
			applied, ok, err := db.ChangelogOffset(name, p)
			if err != nil {
				return nil, err
			}
			from := int64(0)
			if ok {
				from = applied + 1
			}
			if end := ends[tp]; from > end {
				if hwms == nil {
					if hwms, err = tr.HighWaterMarks(ctx, tps); err != nil {
						return nil, fmt.Errorf("high-water marks of %s: %w", topic, err)
					}
				}
				if from <= hwms[tp] {
					return nil, fmt.Errorf("%w: store %s partition %d has applied %s-%d up to offset %d, committed, but it is stable only up to offset %d: the transaction that committed it is still being completed",
						kafkaio.ErrTimeout, name, p, topic, p, applied, end)
				}
				// The store has applied changelog records the topic no longer has (the topic
				// was deleted or recreated): its contents cannot be trusted, so it is rebuilt.
				a.log.Warn("store partition is ahead of its changelog; wiping it and restoring from the changelog",
					"store", name, "partition", p, "applied", applied, "changelog end", end)
				if err := scope.write(func() error { return db.Wipe(name, p) }); err != nil {
					return nil, err
				}
				from = 0
			}
			reads = append(reads, changelogRead{store: name, spec: spec, topic: topic, partition: p, from: from, end: ends[tp]})
		}
	}
	return reads, nil
}

// ensureChangelogs creates the changelog topic of every logged store, one partition per
// task (the largest source partition count), and refuses one that exists with another
// partition count, as Kafka Streams does.
func (a *Agent) ensureChangelogs(k *kafkaClients, b *pipeline.StreamsBuilder) error {
	topics := changelogTopics(a.cfg.ApplicationID, b.Stores(), k.maxPartitions(), a.cfg.ReplicationFactor, a.cfg.WindowStoreChangelogAdditionalRetention)
	if len(topics) == 0 {
		return nil
	}
	adminCfg, err := kafkaio.SaramaConfig(a.cfg, kafkaio.RoleAdmin)
	if err != nil {
		return err
	}
	return kafkaio.EnsureInternalTopics(k.brokers, adminCfg, topics)
}

// versionedChangelogCompactionLag is what Kafka Streams adds to a versioned store's history
// retention for its changelog's min.compaction.lag.ms (VersionedChangelogTopicConfig).
const versionedChangelogCompactionLag = 24 * time.Hour

// changelogTopics are the changelog topics of the logged stores with the settings Kafka
// Streams gives them (InternalTopicConfig and its subclasses): message.timestamp.type
// CreateTime, so that a restore sees the records' own timestamps whatever the broker's
// default; compacted, and for window and session stores deleted too after their retention
// plus additional (windowstore.changelog.additional.retention.ms), only deleted for the
// stores of stream-stream joins (they retain duplicates); for versioned stores a
// min.compaction.lag.ms of their history retention plus a day; the store's own topic
// settings (withLoggingEnabled(Map)) over all that, and a retention.ms or
// min.compaction.lag.ms among them taken as it is.
func changelogTopics(appID string, stores []pipeline.StoreSpec, partitions int32, replication int16, additional time.Duration) map[string]kafkaio.TopicSpec {
	topics := map[string]kafkaio.TopicSpec{}
	for _, s := range stores {
		if !s.Logged {
			continue
		}
		configs := map[string]string{"message.timestamp.type": "CreateTime", "cleanup.policy": "compact"}
		switch s.Type {
		case pipeline.WindowStoreType, pipeline.TimestampedWindowStoreType, pipeline.SessionStoreType:
			configs["cleanup.policy"] = "compact,delete"
			if s.RetainDuplicates {
				configs["cleanup.policy"] = "delete"
			}
			configs["retention.ms"] = strconv.FormatInt(saturatingAdd(s.Retention, additional.Milliseconds()), 10)
		case pipeline.VersionedKeyValueStoreType:
			configs["min.compaction.lag.ms"] = strconv.FormatInt(saturatingAdd(s.HistoryRetention, versionedChangelogCompactionLag.Milliseconds()), 10)
		}
		maps.Copy(configs, s.TopicConfig)
		ptrs := make(map[string]*string, len(configs))
		for name, v := range configs {
			ptrs[name] = &v
		}
		topics[pipeline.ChangelogTopic(appID, s.Name)] = kafkaio.TopicSpec{Partitions: partitions, ReplicationFactor: replication, Configs: ptrs}
	}
	return topics
}

// saturatingAdd is a + b for non-negative a and b, math.MaxInt64 where that overflows, as
// Kafka Streams' Math.addExact with its fallback to Long.MAX_VALUE.
func saturatingAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
