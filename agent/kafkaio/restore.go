package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// A TopicReader reads partitions up to their end under read_committed isolation, whatever
// its config says, through one client for all its reads: the agent restores and follows
// every changelog partition, and a client each would connect and fetch metadata each time.
type TopicReader struct{ client sarama.Client }

// NewTopicReader connects a reader; Close releases it.
func NewTopicReader(brokers []string, cfg *sarama.Config) (*TopicReader, error) {
	client, err := readCommittedClient(brokers, cfg)
	if err != nil {
		return nil, err
	}
	return &TopicReader{client: client}, nil
}

// Close closes the reader's client.
func (tr *TopicReader) Close() error { return tr.client.Close() }

// ReadToEnd reads partition of topic from offset from (inclusive; 0 when from < 0) up to
// the end it finds when it starts: the last stable offset. It calls fn with the records of
// each fetch, in offset order; transaction markers and the records of aborted transactions
// are never delivered. It returns the offset of the last record fn accepted (from-1 if
// none), also with an error. The agent restores state stores from changelog topics with it.
//
// If from is below the log start (records deleted by retention), reading starts at the
// log start. Records fn receives are not reused: it may keep them.
func (tr *TopicReader) ReadToEnd(ctx context.Context, topic string, partition int32, from int64, fn func([]pipeline.SourceRecord) error) (last int64, err error) {
	from = max(from, 0)
	last = from - 1
	where := fmt.Sprintf("read %s/%d to its end", topic, partition)
	if fn == nil {
		return last, fmt.Errorf("%s: nil record callback", where)
	}
	client := tr.client
	tp := pipeline.TopicPartition{Topic: topic, Partition: partition}
	ends, err := listOffsets(ctx, client, []pipeline.TopicPartition{tp}, sarama.OffsetNewest)
	if err != nil {
		return last, fmt.Errorf("%s: %w", where, err)
	}
	end := ends[tp]
	r := &committedReader{topic: topic, partition: partition, next: from}
	fetchBytes := client.Config().Consumer.Fetch.Default
	for r.next < end {
		block, err := fetchBlock(ctx, client, r.next, tp, fetchBytes)
		if errors.Is(err, sarama.ErrOffsetOutOfRange) {
			start, serr := listOffsets(ctx, client, []pipeline.TopicPartition{tp}, sarama.OffsetOldest)
			if serr == nil && start[tp] > r.next {
				r.next = start[tp]
				continue
			}
		}
		if err != nil {
			return last, fmt.Errorf("%s: fetch at offset %d (end %d): %w", where, r.next, end, err)
		}
		before := r.next
		msgs, partial, err := r.read(block)
		if err != nil {
			return last, fmt.Errorf("%s: %w", where, err)
		}
		// Records past the end were committed after we started: they wait for the
		// next commit's changelog offsets.
		for len(msgs) > 0 && msgs[len(msgs)-1].Offset >= end {
			msgs = msgs[:len(msgs)-1]
		}
		if len(msgs) > 0 {
			if err := fn(msgs); err != nil {
				return last, fmt.Errorf("%s: records %d..%d: %w", where, msgs[0].Offset, msgs[len(msgs)-1].Offset, err)
			}
			last = msgs[len(msgs)-1].Offset
		}
		switch {
		case partial && fetchBytes >= sarama.MaxResponseSize/2:
			return last, fmt.Errorf("%s: the batch at offset %d is larger than %d bytes", where, r.next, sarama.MaxResponseSize)
		case partial:
			fetchBytes *= 2
		case r.next == before:
			return last, fmt.Errorf("%s: the broker returned no record batch at offset %d below the end %d (not supported yet: batches emptied by compaction)", where, r.next, end)
		}
		if err := ctx.Err(); err != nil {
			return last, fmt.Errorf("%s: stopped at offset %d (end %d): %w", where, r.next, end, err)
		}
	}
	return last, nil
}

// EndOffsets returns the end of each partition as a read_committed consumer sees it: the
// last stable offset (the high-water mark when no transaction is open). ReadToEnd reads
// up to it.
func (tr *TopicReader) EndOffsets(ctx context.Context, tps []pipeline.TopicPartition) (map[pipeline.TopicPartition]int64, error) {
	if len(tps) == 0 {
		return map[pipeline.TopicPartition]int64{}, nil
	}
	ends, err := listOffsets(ctx, tr.client, tps, sarama.OffsetNewest)
	if err != nil {
		return nil, fmt.Errorf("end offsets: %w", err)
	}
	return ends, nil
}

// HighWaterMarks returns the end of each partition as a read_uncommitted consumer sees it:
// past the records of transactions still open or being completed, which EndOffsets stops
// before.
func (tr *TopicReader) HighWaterMarks(ctx context.Context, tps []pipeline.TopicPartition) (map[pipeline.TopicPartition]int64, error) {
	if len(tps) == 0 {
		return map[pipeline.TopicPartition]int64{}, nil
	}
	hwms, err := listOffsetsAt(ctx, tr.client, tps, sarama.OffsetNewest, sarama.ReadUncommitted)
	if err != nil {
		return nil, fmt.Errorf("high-water marks: %w", err)
	}
	return hwms, nil
}

// readCommittedClient connects with a copy of cfg set to read_committed, which needs
// Kafka 0.11 (transactions) or later.
func readCommittedClient(brokers []string, cfg *sarama.Config) (sarama.Client, error) {
	if cfg == nil {
		return nil, errors.New("nil sarama config")
	}
	if !cfg.Version.IsAtLeast(sarama.V0_11_0_0) {
		return nil, fmt.Errorf("read_committed needs Kafka version >= 0.11.0, have %s", cfg.Version)
	}
	c := *cfg
	c.Consumer.IsolationLevel = sarama.ReadCommitted
	client, err := sarama.NewClient(brokers, &c)
	if errors.Is(err, sarama.ErrOutOfBrokers) {
		// No broker answered: the cluster may be back later.
		err = fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("connect to %v: %w", brokers, err)
	}
	return client, nil
}

// fetchVersion is the first Fetch version with isolation levels and aborted transactions.
const fetchVersion = 4

// fetchBlock fetches partition tp from offset at its leader, retrying on leadership
// changes.
func fetchBlock(ctx context.Context, client sarama.Client, offset int64, tp pipeline.TopicPartition, maxBytes int32) (*sarama.FetchResponseBlock, error) {
	conf := client.Config()
	var block *sarama.FetchResponseBlock
	err := withRetries(ctx, client, []pipeline.TopicPartition{tp}, func() error {
		leader, err := client.Leader(tp.Topic, tp.Partition)
		if err != nil {
			return err
		}
		req := &sarama.FetchRequest{
			Version:     fetchVersion,
			MaxWaitTime: int32(conf.Consumer.MaxWaitTime / time.Millisecond),
			MinBytes:    conf.Consumer.Fetch.Min,
			MaxBytes:    sarama.MaxResponseSize,
			Isolation:   sarama.ReadCommitted,
		}
		req.AddBlock(tp.Topic, tp.Partition, offset, maxBytes, -1)
		resp, err := leader.Fetch(req)
		if err != nil {
			return err
		}
		b := resp.GetBlock(tp.Topic, tp.Partition)
		if b == nil {
			return sarama.ErrIncompleteResponse
		}
		if b.Err != sarama.ErrNoError {
			return b.Err
		}
		block = b
		return nil
	})
	return block, err
}

// listOffsets asks each partition's leader for its read_committed offset at time
// (sarama.OffsetNewest: the last stable offset; sarama.OffsetOldest: the log start).
func listOffsets(ctx context.Context, client sarama.Client, tps []pipeline.TopicPartition, at int64) (map[pipeline.TopicPartition]int64, error) {
	return listOffsetsAt(ctx, client, tps, at, sarama.ReadCommitted)
}

// listOffsetsAt is listOffsets at an isolation level.
func listOffsetsAt(ctx context.Context, client sarama.Client, tps []pipeline.TopicPartition, at int64, isolation sarama.IsolationLevel) (map[pipeline.TopicPartition]int64, error) {
	out := make(map[pipeline.TopicPartition]int64, len(tps))
	err := withRetries(ctx, client, tps, func() error {
		byLeader := make(map[*sarama.Broker][]pipeline.TopicPartition)
		for _, tp := range tps {
			if _, done := out[tp]; done {
				continue
			}
			leader, err := client.Leader(tp.Topic, tp.Partition)
			if err != nil {
				return fmt.Errorf("leader of %s/%d: %w", tp.Topic, tp.Partition, err)
			}
			byLeader[leader] = append(byLeader[leader], tp)
		}
		for leader, parts := range byLeader {
			req := sarama.NewOffsetRequest(client.Config().Version)
			req.IsolationLevel = isolation
			for _, tp := range parts {
				req.AddBlock(tp.Topic, tp.Partition, at, 1)
			}
			resp, err := leader.GetAvailableOffsets(req)
			if err != nil {
				return err
			}
			for _, tp := range parts {
				b := resp.GetBlock(tp.Topic, tp.Partition)
				if b == nil {
					return fmt.Errorf("offset of %s/%d: %w", tp.Topic, tp.Partition, sarama.ErrIncompleteResponse)
				}
				if b.Err != sarama.ErrNoError {
					return fmt.Errorf("offset of %s/%d: %w", tp.Topic, tp.Partition, b.Err)
				}
				out[tp] = b.Offset
			}
		}
		return nil
	})
	return out, err
}

// withRetries runs op until it succeeds, fails with an error a retry cannot cure, or both
// Metadata.Retry.Max retries and request.timeout.ms (Net.ReadTimeout) are spent; before
// each retry it refreshes the metadata of the topics in tps and waits
// Metadata.Retry.Backoff. A few retries are not enough for a leader just elected: it
// answers OFFSET_NOT_AVAILABLE until its high-water mark has caught up, seconds after a
// broker died or the whole cluster restarted. A retriable error it gives up on wraps
// ErrTimeout: the caller may try again later.
func withRetries(ctx context.Context, client sarama.Client, tps []pipeline.TopicPartition, op func() error) error {
	conf := client.Config()
	topics := make([]string, 0, len(tps))
	for _, tp := range tps {
		topics = append(topics, tp.Topic)
	}
	start := time.Now()
	for attempt := 0; ; attempt++ {
		err := op()
		if err == nil || !retriable(err) {
			return err
		}
		if attempt >= conf.Metadata.Retry.Max && time.Since(start) >= conf.Net.ReadTimeout {
			return fmt.Errorf("%w: %d tries over %v: %w", ErrTimeout, attempt+1, time.Since(start).Round(time.Millisecond), err)
		}
		t := time.NewTimer(conf.Metadata.Retry.Backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
		_ = client.RefreshMetadata(topics...)
	}
}

// retriable is true for errors that a metadata refresh and a new attempt may cure:
// leadership moves and lost connections.
func retriable(err error) bool {
	var kerr sarama.KError
	if errors.As(err, &kerr) {
		switch kerr {
		case sarama.ErrNotLeaderForPartition, sarama.ErrLeaderNotAvailable, sarama.ErrReplicaNotAvailable,
			sarama.ErrRequestTimedOut, sarama.ErrNetworkException, sarama.ErrFencedLeaderEpoch,
			sarama.ErrUnknownLeaderEpoch, sarama.ErrOffsetNotAvailable, sarama.ErrNotEnoughReplicas,
			sarama.ErrKafkaStorageError:
			return true
		}
		return false
	}
	// Not a broker's error code: the connection broke, or the response did not parse.
	return !errors.Is(err, sarama.ErrOffsetOutOfRange) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// GlobalFetcher reads each partition of a global table's topic (counts holds the partition
// counts) to its end, read committed, from the store's next offset, under the context
// withCtx gives; afterBatch, when set, runs after each batch.
func GlobalFetcher(brokers []string, cfg *sarama.Config, counts map[string]int32,
	withCtx func() (context.Context, context.CancelFunc), afterBatch func() error) pipeline.GlobalFetcher {
	return func(topic string, next func(int32) (int64, error), apply func(pipeline.SourceRecord) error) error {
		tr, err := NewTopicReader(brokers, cfg)
		if err != nil {
			return fmt.Errorf("read %s: %w", topic, err)
		}
		defer tr.Close()
		for p := range counts[topic] {
			from, err := next(p)
			if err != nil {
				return err
			}
			ctx, cancel := withCtx()
			_, err = tr.ReadToEnd(ctx, topic, p, from, func(msgs []pipeline.SourceRecord) error {
				for _, m := range msgs {
					if err := apply(m); err != nil {
						return err
					}
				}
				if afterBatch != nil {
					return afterBatch()
				}
				return nil
			})
			cancel()
			if err != nil {
				return err
			}
		}
		return nil
	}
}
