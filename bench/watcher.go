package main

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
)

// watcher reads the output topic as a downstream read_committed consumer would: an output
// counts once it is available to one. It counts every record and, from a starting
// timestamp on, samples latency as the time it read a record minus the record's
// timestamp (the input record's, for these pipelines).
type watcher struct {
	consumer sarama.Consumer
	parts    []sarama.PartitionConsumer
	count    atomic.Int64
	since    atomic.Int64 // record timestamps (ms) from which latency is sampled; 0 = none
	mu       sync.Mutex
	samples  []time.Duration
	failed   atomic.Pointer[sarama.ConsumerError]
	wg       sync.WaitGroup
	// tally, when set, gets every record read (-verify).
	tally *countTally
}

// newWatcher reads the output topic from its start; tally, if not nil, gets every record.
func newWatcher(brokers []string, tally *countTally) (*watcher, error) {
	c := sarama.NewConfig()
	c.Version = sarama.V3_6_0_0
	c.Consumer.IsolationLevel = sarama.ReadCommitted
	c.Consumer.Return.Errors = true
	c.Consumer.MaxWaitTime = 50 * time.Millisecond
	consumer, err := sarama.NewConsumer(brokers, c)
	if err != nil {
		return nil, fmt.Errorf("output consumer: %w", err)
	}
	w := &watcher{consumer: consumer, tally: tally}
	for p := range int32(partitions) {
		pc, err := consumer.ConsumePartition(outputTopic, p, sarama.OffsetOldest)
		if err != nil {
			w.close()
			return nil, fmt.Errorf("output consumer: partition %d: %w", p, err)
		}
		w.parts = append(w.parts, pc)
		w.wg.Add(2)
		go w.read(pc)
		go func() {
			defer w.wg.Done()
			for e := range pc.Errors() {
				if !retriable(e.Err) {
					w.failed.CompareAndSwap(nil, e)
				}
			}
		}()
	}
	return w, nil
}

func (w *watcher) read(pc sarama.PartitionConsumer) {
	defer w.wg.Done()
	for m := range pc.Messages() {
		now := time.Now()
		if w.tally != nil {
			w.tally.add(m.Key, m.Value, m.Partition, m.Offset)
		}
		w.count.Add(1)
		if since := w.since.Load(); since > 0 && m.Timestamp.UnixMilli() >= since {
			w.mu.Lock()
			w.samples = append(w.samples, now.Sub(m.Timestamp))
			w.mu.Unlock()
		}
	}
}

// sampleFrom drops the samples so far and samples latency for records stamped at or after ms.
func (w *watcher) sampleFrom(ms int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.samples = w.samples[:0]
	w.since.Store(ms)
}

// latencies returns the samples so far, sorted.
func (w *watcher) latencies() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := slices.Clone(w.samples)
	slices.Sort(s)
	return s
}

// waitFor polls until n outputs were read. It fails when the child exits, when the
// output consumer fails, or at the deadline.
func (w *watcher) waitFor(n int64, ch *child, deadline time.Time) error {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for w.count.Load() < n {
		if e := w.failed.Load(); e != nil {
			return fmt.Errorf("output consumer: %w", e)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("read %d of %d output records before the deadline", w.count.Load(), n)
		}
		select {
		case <-ch.exited:
			return fmt.Errorf("the scenario process exited after %d of %d output records: %w", w.count.Load(), n, ch.exitError())
		case <-tick.C:
		}
	}
	return nil
}

func (w *watcher) close() {
	for _, pc := range w.parts {
		pc.AsyncClose()
	}
	w.wg.Wait()
	_ = w.consumer.Close()
}

// retriable says whether the partition consumer goes on after err by itself, finding the
// partition's leader again: a leader moving, or a partition of a topic made again a moment
// ago (Apache Kafka) that its broker does not serve yet.
func retriable(err error) bool {
	for _, e := range []error{sarama.ErrNotLeaderForPartition, sarama.ErrLeaderNotAvailable,
		sarama.ErrUnknownTopicOrPartition, sarama.ErrReplicaNotAvailable, sarama.ErrUnknownLeaderEpoch,
		sarama.ErrFencedLeaderEpoch} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
