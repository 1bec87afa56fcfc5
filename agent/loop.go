package agent

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
)

// loop is the processing goroutine: it runs consumed records through the topology and
// closes an epoch at each commit barrier. Under at-least-once the barrier first waits for
// every produced record to be acknowledged, then commits the consumed offsets, so an offset
// is never committed before the output it caused is in Kafka.
type loop struct {
	a    *Agent
	k    *kafkaClients
	topo *pipeline.Topology

	assigned chan []kafkaio.TopicPartition
	revoke   chan chan error
	done     chan struct{}

	next         map[kafkaio.TopicPartition]int64 // next offset to commit, per partition
	dirty        bool
	epochRecords int
	everRunning  bool
	consumed     map[string]prometheus.Counter
}

func newLoop(a *Agent, k *kafkaClients, topo *pipeline.Topology) *loop {
	return &loop{
		a: a, k: k, topo: topo,
		assigned: make(chan []kafkaio.TopicPartition),
		revoke:   make(chan chan error),
		done:     make(chan struct{}),
		next:     map[kafkaio.TopicPartition]int64{},
		consumed: map[string]prometheus.Counter{},
	}
}

// Assigned implements kafkaio.RebalanceHandler; it runs on the consumer's goroutine.
func (l *loop) Assigned(tps []kafkaio.TopicPartition) {
	select {
	case l.assigned <- tps:
	case <-l.done:
	}
}

// Revoking implements kafkaio.RebalanceHandler: the loop closes its epoch (flush + commit)
// before the partitions are given up.
func (l *loop) Revoking([]kafkaio.TopicPartition) {
	reply := make(chan error)
	select {
	case l.revoke <- reply:
		<-reply
	case <-l.done:
	}
}

func (l *loop) run(ctx context.Context) error {
	defer close(l.done)
	ticker := time.NewTicker(l.a.cfg.CommitInterval)
	defer ticker.Stop()
	msgs := l.k.consumer.Messages()
	errs := l.k.consumer.Errors()
	for {
		select {
		case <-ctx.Done():
			return l.commit()
		case batch := <-msgs:
			if err := l.process(batch); err != nil {
				return err
			}
		case <-ticker.C:
			if err := l.commit(); err != nil {
				return err
			}
		case reply := <-l.revoke:
			err := l.commit()
			reply <- err
			if err != nil {
				return err
			}
			if l.a.state.Current() == StateRunning {
				_ = l.a.state.Transition(StateRebalancing)
			}
		case tps := <-l.assigned:
			l.a.log.Info("partitions assigned", "partitions", len(tps))
			if l.a.state.Current() != StateRunning {
				_ = l.a.state.Transition(StateRunning)
			}
			if !l.everRunning {
				l.everRunning = true
				l.a.notifySystemd(sdReady)
			}
		case err := <-errs:
			l.a.log.Warn("consumer", "err", err)
		}
	}
}

func (l *loop) process(batch []kafkaio.Message) error {
	m := l.a.metrics
	for i := range batch {
		msg := &batch[i]
		start := time.Now()
		err := l.topo.Process(pipeline.SourceRecord{
			Topic: msg.Topic, Partition: msg.Partition, Offset: msg.Offset, Timestamp: msg.Timestamp,
			Key: msg.Key, Value: msg.Value, Headers: msg.Headers,
		})
		if err != nil {
			return err
		}
		m.ProcessLatency.Observe(time.Since(start).Seconds())
		l.consumedCounter(msg.Topic).Inc()
		l.next[kafkaio.TopicPartition{Topic: msg.Topic, Partition: msg.Partition}] = msg.Offset + 1
		l.dirty = true
		l.epochRecords++
	}
	return nil
}

func (l *loop) consumedCounter(topic string) prometheus.Counter {
	c, ok := l.consumed[topic]
	if !ok {
		c = l.a.metrics.RecordsConsumed.WithLabelValues(topic)
		l.consumed[topic] = c
	}
	return c
}

// commit is the commit barrier: wait for every output to be acknowledged, then commit the
// offsets of everything processed. A failed offset commit only delays the commit (the
// records will be read again after a rebalance), so it is logged, not fatal.
func (l *loop) commit() error {
	if !l.dirty {
		return nil
	}
	m := l.a.metrics
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), l.a.cfg.TaskTimeout)
	defer cancel()
	if err := l.k.producer.Flush(ctx); err != nil {
		m.Commits.WithLabelValues(metrics.ResultFailure).Inc()
		return err
	}
	if err := l.k.consumer.Commit(l.next); err != nil {
		m.Commits.WithLabelValues(metrics.ResultFailure).Inc()
		l.a.log.Warn("offset commit failed; the records since the last commit will be read again after the rebalance", "err", err)
		return nil
	}
	m.Commits.WithLabelValues(metrics.ResultSuccess).Inc()
	m.CommitLatency.Observe(time.Since(start).Seconds())
	m.EpochSize.Observe(float64(l.epochRecords))
	l.dirty = false
	l.epochRecords = 0
	return nil
}
