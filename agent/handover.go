package agent

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/pipeline"
)

// An application may have run on Kafka Streams before (docs/scaling.md, "Moving between
// Kafka Streams and StoatFlow"). Its stores restore from the changelogs Kafka Streams wrote,
// in the formats both use, and the consumer goes on from the offsets it committed; two
// things are left for the agent that becomes active.
//
// Kafka Streams writes re-keyed records to internal topics (<application.id>-...-repartition,
// a foreign-key join's -subscription-registration-topic and -subscription-response-topic)
// and reads them back in another sub-topology; StoatFlow routes them in memory and writes
// none. Kafka Streams that stops, cleanly or not, leaves in them what it had written and
// not yet read back: in the offsets its group committed, those records come before
// everything the sources still hold. So they are processed first, through the part of the
// topology that reads each topic, and their offsets committed with that epoch; an
// application that never ran on Kafka Streams has no such topic, and nothing is done.
//
// A store whose changelog StoatFlow lays out its own way (StoreSpec.OwnLayout) cannot be
// taken over from Kafka Streams: when Kafka Streams committed the group's offsets last (its
// offset metadata says so) and such a store's changelog is not empty, the agent stops with
// an error naming the store before it processes anything.

// internalTakeoverTimeout bounds the wait for the offsets of a transaction another
// producer left open (a Kafka Streams instance killed in the middle of one) and the reads.
const internalTakeoverTimeout = 2 * time.Minute

// pendingInternal is a partition of an internal topic with records left to process.
type pendingInternal struct {
	topic    pipeline.InternalTopic
	physical string // with the application id
	tp       pipeline.TopicPartition
	from     int64 // committed offset, or 0 when the group has none (Kafka Streams reads them from the earliest)
	end      int64
}

// takeOverFromKafkaStreams refuses stores Kafka Streams wrote that StoatFlow lays out its
// own way, and processes what Kafka Streams left in the application's internal topics.
func (l *loop) takeOverFromKafkaStreams(ctx context.Context) error {
	var topics []pipeline.InternalTopic
	if err := l.workers[0].do(func() error {
		topics = l.workers[0].topo.InternalTopics()
		return nil
	}); err != nil {
		return err
	}
	if l.opts.RepartitionTopics {
		// The consumer reads the internal topics from the group's offsets.
		topics = nil
	}
	// The embedded broker starts empty: no Kafka Streams ever ran against it.
	if l.k.embedded != nil || len(topics) == 0 && !l.hasOwnLayouts() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, internalTakeoverTimeout)
	defer cancel()
	internal, err := l.internalPartitions(topics)
	if err != nil {
		return err
	}
	// Stable offsets: an open transaction that commits offsets of these partitions may
	// still commit records up to them.
	committed, err := l.k.consumer.CommittedStable(ctx, append(slices.Clone(l.assignment), internal...))
	if err != nil {
		return fmt.Errorf("committed offsets: %w", err)
	}
	if err := l.refuseOwnLayouts(ctx, committed); err != nil {
		return err
	}
	pending, err := l.pendingInternal(ctx, topics, internal, committed)
	if err != nil || len(pending) == 0 {
		return err
	}
	var total int64
	for _, p := range pending {
		total += p.end - p.from
	}
	l.a.log.Info("taking over the records Kafka Streams left in the internal topics", "partitions", len(pending), "offsets", total)
	cfg, err := kafkaio.SaramaConfig(l.a.cfg, kafkaio.RoleConsumer)
	if err != nil {
		return err
	}
	tr, err := kafkaio.NewTopicReader(l.k.brokers, cfg)
	if err != nil {
		return fmt.Errorf("take over internal topics: %w", err)
	}
	defer tr.Close()
	for _, p := range pending {
		n := 0
		// The worker that runs the task reading the partition processes its records.
		w := l.workers[l.owners[pipeline.TaskID{Subtopology: p.topic.Subtopology, Partition: p.tp.Partition}]]
		_, err := tr.ReadToEnd(ctx, p.physical, p.tp.Partition, p.from, func(msgs []pipeline.SourceRecord) error {
			l.a.progress.step(time.Now())
			if err := l.epoch.begin(); err != nil {
				return err
			}
			err := w.do(func() error {
				for i := range msgs {
					w.progress.step(time.Now())
					if err := w.settleRecord(&msgs[i], w.topo.ProcessInternal(p.topic.Name, &msgs[i])); err != nil {
						return err
					}
				}
				return w.sendChangelog()
			})
			if err != nil {
				return err
			}
			n += len(msgs)
			l.epoch.consumed(p.tp, msgs[len(msgs)-1].Offset+1, len(msgs))
			return nil
		})
		if err != nil {
			l.halt()
			l.epoch.abortAfterFailure()
			return fmt.Errorf("take over internal topic %s: %w", p.physical, err)
		}
		// The last records may be transaction markers, or of aborted transactions: the
		// offsets go to the end all the same, so that nothing here is read again.
		l.epoch.consumed(p.tp, p.end, 0)
		l.a.log.Info("took over internal topic partition", "topic", p.physical, "partition", p.tp.Partition, "records", n, "from", p.from, "to", p.end)
	}
	err = l.quiesce()
	done := false
	if err == nil {
		done, err = l.epoch.commit(time.Now(), true)
	}
	if err == nil && !done {
		err = errors.New("the group coordinator refused the offsets")
	}
	if err != nil {
		l.halt()
		l.epoch.abortAfterFailure()
		return fmt.Errorf("commit the records taken over from the internal topics: %w", err)
	}
	return nil
}

// internalPartitions are the partitions of the internal topics that exist.
func (l *loop) internalPartitions(topics []pipeline.InternalTopic) ([]pipeline.TopicPartition, error) {
	if len(topics) == 0 {
		return nil, nil
	}
	byName := map[string]pipeline.InternalTopic{}
	names := make([]string, len(topics))
	for i, t := range topics {
		names[i] = l.internalTopic(t)
		byName[names[i]] = t
	}
	adminCfg, err := kafkaio.SaramaConfig(l.a.cfg, kafkaio.RoleAdmin)
	if err != nil {
		return nil, err
	}
	counts, err := kafkaio.ExistingPartitionCounts(l.k.brokers, adminCfg, names)
	if err != nil {
		return nil, fmt.Errorf("internal topics: %w", err)
	}
	var tps []pipeline.TopicPartition
	for _, name := range names {
		n, ok := counts[name]
		if !ok {
			continue
		}
		if want := byName[name].Partitions; n != want {
			return nil, fmt.Errorf("internal topic %s has %d partitions, the topology %d: it is not this topology's (delete it, or use another application.id)", name, n, want)
		}
		for p := range n {
			tps = append(tps, pipeline.TopicPartition{Topic: name, Partition: p})
		}
	}
	return tps, nil
}

func (l *loop) internalTopic(t pipeline.InternalTopic) string {
	return l.a.cfg.ApplicationID + "-" + t.Name
}

// pendingInternal finds the partitions of internal topics that hold records past the group's
// committed offsets.
func (l *loop) pendingInternal(ctx context.Context, topics []pipeline.InternalTopic, tps []pipeline.TopicPartition,
	committed map[pipeline.TopicPartition]kafkaio.CommittedOffset) ([]pendingInternal, error) {
	if len(tps) == 0 {
		return nil, nil
	}
	byName := map[string]pipeline.InternalTopic{}
	for _, t := range topics {
		byName[l.internalTopic(t)] = t
	}
	cfg, err := kafkaio.SaramaConfig(l.a.cfg, kafkaio.RoleConsumer)
	if err != nil {
		return nil, err
	}
	tr, err := kafkaio.NewTopicReader(l.k.brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("internal topics: %w", err)
	}
	defer tr.Close()
	ends, err := tr.EndOffsets(ctx, tps)
	if err != nil {
		return nil, fmt.Errorf("internal topics: %w", err)
	}
	var out []pendingInternal
	for _, tp := range tps {
		from := max(committed[tp].Offset, 0)
		if from < ends[tp] {
			out = append(out, pendingInternal{topic: byName[tp.Topic], physical: tp.Topic, tp: tp, from: from, end: ends[tp]})
		}
	}
	return out, nil
}

func (l *loop) hasOwnLayouts() bool {
	for _, s := range l.b.Stores() {
		if s.Logged && s.OwnLayout != "" {
			return true
		}
	}
	return false
}

// refuseOwnLayouts fails when Kafka Streams committed the group's offsets last and a store
// StoatFlow lays out its own way has records in its changelog: Kafka Streams wrote them in
// its layout, or will read StoatFlow's as its own.
func (l *loop) refuseOwnLayouts(ctx context.Context, committed map[pipeline.TopicPartition]kafkaio.CommittedOffset) error {
	byKafkaStreams := ""
	for tp, c := range committed {
		if kafkaStreamsMetadata(c.Metadata) {
			byKafkaStreams = fmt.Sprintf("%s/%d", tp.Topic, tp.Partition)
			break
		}
	}
	if byKafkaStreams == "" {
		return nil
	}
	cfg, err := kafkaio.SaramaConfig(l.a.cfg, kafkaio.RoleConsumer)
	if err != nil {
		return err
	}
	tr, err := kafkaio.NewTopicReader(l.k.brokers, cfg)
	if err != nil {
		return fmt.Errorf("changelogs: %w", err)
	}
	defer tr.Close()
	for _, s := range l.b.Stores() {
		if !s.Logged || s.OwnLayout == "" {
			continue
		}
		topic := pipeline.ChangelogTopic(l.a.cfg.ApplicationID, s.Name)
		tps := make([]pipeline.TopicPartition, l.k.maxPartitions())
		for p := range tps {
			tps[p] = pipeline.TopicPartition{Topic: topic, Partition: int32(p)}
		}
		ends, err := tr.EndOffsets(ctx, tps)
		if err != nil {
			return fmt.Errorf("changelog of store %s: %w", s.Name, err)
		}
		for _, tp := range tps {
			if ends[tp] > 0 {
				return fmt.Errorf("store %s cannot be taken over from Kafka Streams (it committed the offsets of %s last): "+
					"StoatFlow keeps %s, and its changelog %s holds records; not supported yet: "+
					"moving an application with this store between Kafka Streams and StoatFlow (docs/scaling.md)",
					s.Name, byKafkaStreams, s.OwnLayout, topic)
			}
		}
	}
	return nil
}

// kafkaStreamsMetadata reports whether offset metadata is Kafka Streams' (its
// TopicPartitionMetadata: base64 of a version byte, 1 or 2, and the partition's stream time).
// StoatFlow commits none.
func kafkaStreamsMetadata(md string) bool {
	b, err := base64.StdEncoding.DecodeString(md)
	return err == nil && len(b) >= 9 && (b[0] == 1 || b[0] == 2)
}
