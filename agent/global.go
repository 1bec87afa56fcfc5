package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// globalUpdateInterval is how often, while running, the global stores read what is new in
// their topics (Kafka Streams' global thread polls continuously; here the processing
// goroutine reads between batches, so the stores lag their topics by about this much).
const globalUpdateInterval = time.Second

// globalStores keeps the global stores current. boot reads each store's topic, all
// partitions, from the offsets committed with the store (so a restart reads only what is
// new) to the end offsets, before processing starts, and again when the state database was
// rebuilt; schedule adds the updates that keep the stores current while the application
// runs to a topology (every topology built, again after a rebuild). docs/state.md
// describes the design.
type globalStores struct {
	boot     func(ctx context.Context, t *pipeline.Topology, db *state.DB) error
	schedule func(*pipeline.Topology) error
}

// globalStoresOf checks (on the embedded broker: creates) the global tables' topics.
func (a *Agent) globalStoresOf(k *kafkaClients, b *pipeline.StreamsBuilder) (*globalStores, error) {
	noop := &globalStores{
		boot:     func(context.Context, *pipeline.Topology, *state.DB) error { return nil },
		schedule: func(*pipeline.Topology) error { return nil },
	}
	globals := b.GlobalStores()
	if len(globals) == 0 {
		return noop, nil
	}
	topics := make([]string, len(globals))
	for i, g := range globals {
		topics[i] = g.Topic
	}
	adminCfg, err := kafkaio.SaramaConfig(a.cfg, kafkaio.RoleAdmin)
	if err != nil {
		return nil, err
	}
	if k.embedded != nil {
		specs := map[string]kafkaio.TopicSpec{}
		for _, t := range topics {
			specs[t] = kafkaio.TopicSpec{Partitions: a.cfg.EmbeddedPartitions, ReplicationFactor: -1}
		}
		if err := kafkaio.EnsureTopics(k.brokers, adminCfg, specs); err != nil {
			return nil, err
		}
	}
	counts, err := kafkaio.PartitionCounts(k.brokers, adminCfg, topics)
	if err != nil {
		return nil, err
	}
	for _, t := range topics {
		if counts[t] == 0 {
			return nil, fmt.Errorf("global table topic %s does not exist (create it first)", t)
		}
	}
	cfg, err := kafkaio.SaramaConfig(a.cfg, kafkaio.RoleConsumer)
	if err != nil {
		return nil, err
	}
	// While running, the fetched records belong to the processing epoch and commit with it.
	run := kafkaio.GlobalFetcher(k.brokers, cfg, counts, func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), a.cfg.KafkaWait())
	}, nil)
	return &globalStores{
		boot: func(ctx context.Context, t *pipeline.Topology, db *state.DB) error {
			a.log.Info("bootstrapping global stores from their topics", "topics", topics)
			start := time.Now()
			// Start-up commits after every fetched batch, so a large topic never sits whole
			// in the epoch buffer; offsets and data commit together.
			boot := kafkaio.GlobalFetcher(k.brokers, cfg, counts, func() (context.Context, context.CancelFunc) { return ctx, func() {} }, func() error { return db.Commit(nil) })
			if err := t.UpdateGlobalStores(boot); err != nil {
				db.Abort()
				return err
			}
			a.log.Info("global stores bootstrapped", "took", time.Since(start).Round(time.Millisecond))
			return nil
		},
		schedule: func(t *pipeline.Topology) error {
			return t.ScheduleGlobalUpdates(globalUpdateInterval.Milliseconds(), run)
		},
	}, nil
}
