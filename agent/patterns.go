package agent

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
)

// subscriptionChange is a new set of source topics found by watchPatterns, with the
// partition counts of the topics it adds, or the error that stops the application.
type subscriptionChange struct {
	topics []string
	counts map[string]int32
	err    error
}

// watchPatterns matches the source patterns against the cluster's topics every
// metadata.max.age.ms, as Kafka Streams' consumer does for a pattern subscription, and
// hands the loop every change. It returns when ctx ends or after reporting an error.
func (l *loop) watchPatterns(ctx context.Context, changes chan<- subscriptionChange) {
	every := config.MetadataMaxAge.Get(l.a.cfg.Client(config.ForConsumer))
	last := slices.Clone(l.k.subscription)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		all, err := l.k.consumer.ClusterTopics()
		if err != nil {
			l.a.log.Warn("source patterns: cannot list the cluster's topics; trying again at the next refresh", "err", err)
			continue
		}
		topics, err := l.b.Subscription(all)
		if err == nil && slices.Equal(topics, last) {
			continue
		}
		var counts map[string]int32
		if err == nil {
			var added []string
			for _, topic := range topics {
				if !slices.Contains(last, topic) {
					added = append(added, topic)
				}
			}
			if counts, err = kafkaio.PartitionCounts(l.k.brokers, l.k.adminCfg, added); err != nil {
				l.a.log.Warn("source patterns: cannot describe the new topics; trying again at the next refresh", "topics", added, "err", err)
				continue
			}
		}
		select {
		case changes <- subscriptionChange{topics: topics, counts: counts, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
		last = topics
	}
}

// resubscribe takes a subscription change: the consumer rejoins the group with the new
// topics. A new topic with more partitions than the application has tasks would need new
// tasks and changelog partitions, which Kafka Streams cannot give a running application
// either: it stops the application.
func (l *loop) resubscribe(c subscriptionChange) error {
	if c.err != nil {
		return c.err
	}
	tasks := l.k.maxPartitions()
	for topic, n := range c.counts {
		if n > tasks {
			return fmt.Errorf("topic %s, matched by a source pattern, has %d partitions, more than the application's %d tasks (the largest source partition count at the start); not supported yet: growing the tasks of a running application", topic, n, tasks)
		}
	}
	counts := make(map[string]int32, len(c.topics))
	for _, topic := range c.topics {
		if n, ok := l.k.sourcePartitions[topic]; ok {
			counts[topic] = n
		} else {
			counts[topic] = c.counts[topic]
		}
	}
	l.a.log.Info("source patterns: the subscription changed", "topics", c.topics)
	// A fresh map: the store catalog shares the old one with the query handlers.
	l.k.sourcePartitions = counts
	l.k.subscription = c.topics
	// The topologies (and those built later) learn the new topics' partitions before the
	// rebalance, so that the assignment after it gives each new task a worker: a record of
	// a partition no task ran before would otherwise reach a worker that does not run it.
	l.opts.SourcePartitions = counts
	if err := l.all(func(w *worker) error {
		if w.topo != nil {
			w.topo.SetSourcePartitions(counts)
		}
		return nil
	}); err != nil {
		return err
	}
	l.k.consumer.Subscribe(c.topics)
	return nil
}
