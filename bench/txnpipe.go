package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/pipeline"
)

// The exactly-once pipes (issue 28, item 4) are the ceiling's copy made exactly-once: a
// consumer group member reads the input read_committed and copies every record to the output
// topic's same partition in a transaction, which commits the consumed offsets with the
// records every commit.interval.ms, as the agent's commit barrier does under exactly_once_v2.
// The two pipes differ in their transactional producer only: sarama's own AsyncProducer, or
// the agent's (agent/kafkaio). Both get the producer config the agent builds from the same
// agent config (kafkaio.SaramaConfig and MakeTransactional), so batching, acks, retries and
// the transactional id are the agent's.

// Which transactional producer an exactly-once pipe runs on.
const (
	txnProducerSarama  = "sarama"
	txnProducerKafkaio = "kafkaio"
)

// txnProducer is the little of a transactional producer the pipe uses.
type txnProducer interface {
	// sender returns a function that sends one record from one claim goroutine.
	sender() func(msg *sarama.ConsumerMessage) error
	begin() error
	// commit adds the offsets of the group member to the open transaction and commits it,
	// once every record sent in it is acknowledged.
	commit(ctx context.Context, offsets map[pipeline.TopicPartition]int64, group *sarama.ConsumerGroupMetadata) error
	close() error
}

// newTxnProducer starts the producer of kind with the agent's transactional producer config.
func newTxnProducer(kind string, cfg *config.Config) (txnProducer, error) {
	pcfg, err := kafkaio.SaramaConfig(cfg, kafkaio.RoleProducer)
	if err != nil {
		return nil, err
	}
	kafkaio.MakeTransactional(pcfg, cfg, "")
	switch kind {
	case txnProducerSarama:
		return newSaramaTxn(cfg, pcfg)
	case txnProducerKafkaio:
		p, err := kafkaio.NewProducerWith(cfg.BootstrapServers, pcfg, kafkaio.ProducerLimitsFor(cfg))
		if err != nil {
			return nil, fmt.Errorf("exactly-once pipe: %w", err)
		}
		return kafkaioTxn{p}, nil
	}
	return nil, fmt.Errorf("exactly-once pipe: unknown producer %q", kind)
}

// saramaTxn is sarama's transactional AsyncProducer. It returns successes, as the agent's
// producer reports every acknowledgement (OnAck counts the records produced), so their
// channel is drained.
type saramaTxn struct {
	p       sarama.AsyncProducer
	failed  atomic.Pointer[sarama.ProducerError]
	drained sync.WaitGroup
}

func newSaramaTxn(cfg *config.Config, pcfg *sarama.Config) (*saramaTxn, error) {
	pcfg.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewAsyncProducer(cfg.BootstrapServers, pcfg)
	if err != nil {
		return nil, fmt.Errorf("exactly-once pipe: sarama's transactional producer %q: %w", pcfg.Producer.Transaction.ID, err)
	}
	s := &saramaTxn{p: p}
	s.drained.Add(2)
	go func() {
		defer s.drained.Done()
		for range p.Successes() {
		}
	}()
	go func() {
		defer s.drained.Done()
		for e := range p.Errors() {
			s.failed.CompareAndSwap(nil, e)
		}
	}()
	return s, nil
}

func (s *saramaTxn) sender() func(*sarama.ConsumerMessage) error {
	return func(msg *sarama.ConsumerMessage) error {
		if e := s.failed.Load(); e != nil {
			return e
		}
		s.p.Input() <- &sarama.ProducerMessage{
			Topic: outputTopic, Partition: msg.Partition,
			Key: sarama.ByteEncoder(msg.Key), Value: sarama.ByteEncoder(msg.Value),
			Timestamp: msg.Timestamp,
		}
		return nil
	}
}

func (s *saramaTxn) begin() error { return s.p.BeginTxn() }

func (s *saramaTxn) commit(_ context.Context, offsets map[pipeline.TopicPartition]int64, group *sarama.ConsumerGroupMetadata) error {
	req := map[string][]*sarama.PartitionOffsetMetadata{}
	for tp, off := range offsets {
		req[tp.Topic] = append(req[tp.Topic], &sarama.PartitionOffsetMetadata{Partition: tp.Partition, Offset: off})
	}
	if err := s.p.AddOffsetsToTxnWithGroupMetadata(req, group); err != nil {
		return err
	}
	// CommitTxn waits for the records in flight; one that failed leaves the transaction
	// in error, so CommitTxn fails too.
	return s.p.CommitTxn()
}

func (s *saramaTxn) close() error {
	err := s.p.Close()
	s.drained.Wait()
	return err
}

// kafkaioTxn is the agent's transactional producer.
type kafkaioTxn struct{ p *kafkaio.Producer }

func (k kafkaioTxn) sender() func(*sarama.ConsumerMessage) error {
	lane := k.p.NewLane()
	return func(msg *sarama.ConsumerMessage) error {
		return lane.Send(outputTopic, msg.Partition, msg.Key, msg.Value, nil, msg.Timestamp.UnixMilli(), nil)
	}
}

func (k kafkaioTxn) begin() error { return k.p.BeginTxn() }

func (k kafkaioTxn) commit(ctx context.Context, offsets map[pipeline.TopicPartition]int64, group *sarama.ConsumerGroupMetadata) error {
	return k.p.CommitTxnInGroup(ctx, offsets, group)
}

func (k kafkaioTxn) close() error { return k.p.Close() }

// runTxnPipe runs the exactly-once pipe on the producer of kind until ctx ends.
func runTxnPipe(ctx context.Context, cfg *config.Config, kind string, running chan<- struct{}) error {
	ccfg, err := kafkaio.SaramaConfig(cfg, kafkaio.RoleConsumer)
	if err != nil {
		return err
	}
	if ccfg.Consumer.IsolationLevel != sarama.ReadCommitted {
		return fmt.Errorf("exactly-once pipe: the consumer config of %q reads uncommitted records", cfg.ApplicationID)
	}
	producer, err := newTxnProducer(kind, cfg)
	if err != nil {
		return err
	}
	h := &txnPipeHandler{producer: producer, groupID: cfg.ApplicationID, interval: cfg.CommitInterval, running: running}
	if err := producer.begin(); err != nil {
		_ = producer.close()
		return fmt.Errorf("exactly-once pipe: begin transaction: %w", err)
	}
	group, err := sarama.NewConsumerGroup(cfg.BootstrapServers, cfg.ApplicationID, ccfg)
	if err != nil {
		_ = producer.close()
		return fmt.Errorf("exactly-once pipe consumer: %w", err)
	}
	var errs []error
	for ctx.Err() == nil {
		if err := group.Consume(ctx, []string{inputTopic}, h); err != nil {
			errs = append(errs, fmt.Errorf("exactly-once pipe consumer: %w", err))
			break
		}
		if e := h.failed.Load(); e != nil {
			errs = append(errs, *e)
			break
		}
	}
	errs = append(errs, group.Close(), producer.close())
	return errors.Join(errs...)
}

// txnPipeHandler copies each claim's records on the claim's goroutine, under mu's read
// lock; the committer takes mu's write lock, so that a transaction holds exactly the records
// whose offsets it commits.
type txnPipeHandler struct {
	producer txnProducer
	groupID  string
	interval time.Duration
	running  chan<- struct{}
	once     sync.Once
	failed   atomic.Pointer[error]

	mu sync.RWMutex
	// next is the offset after the last record sent, per claimed partition: each is written
	// by its claim's goroutine under the read lock and read under the write lock.
	next  map[pipeline.TopicPartition]*int64
	sent  atomic.Bool // a record was sent since the last commit
	group *sarama.ConsumerGroupMetadata
	stop  chan struct{}
	done  chan struct{}
}

func (h *txnPipeHandler) fail(err error) {
	h.failed.CompareAndSwap(nil, &err)
}

func (h *txnPipeHandler) Setup(s sarama.ConsumerGroupSession) error {
	h.next = map[pipeline.TopicPartition]*int64{}
	for topic, parts := range s.Claims() {
		for _, p := range parts {
			h.next[pipeline.TopicPartition{Topic: topic, Partition: p}] = new(int64)
		}
	}
	h.group = &sarama.ConsumerGroupMetadata{GroupID: h.groupID, GenerationID: s.GenerationID(), MemberID: s.MemberID()}
	h.stop, h.done = make(chan struct{}), make(chan struct{})
	go h.commitEvery(s.Context())
	h.once.Do(func() { close(h.running) })
	return nil
}

// Cleanup commits what the generation copied before its partitions can move.
func (h *txnPipeHandler) Cleanup(s sarama.ConsumerGroupSession) error {
	close(h.stop)
	<-h.done
	if err := h.commitNow(context.Background()); err != nil {
		h.fail(err)
		return err
	}
	return nil
}

func (h *txnPipeHandler) commitEvery(ctx context.Context) {
	defer close(h.done)
	tick := time.NewTicker(h.interval)
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-tick.C:
			if err := h.commitNow(ctx); err != nil {
				h.fail(err)
				return
			}
		}
	}
}

// commitNow commits the open transaction, if a record was sent in it, and begins the next.
func (h *txnPipeHandler) commitNow(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.sent.Load() {
		return nil
	}
	offsets := map[pipeline.TopicPartition]int64{}
	for tp, next := range h.next {
		if *next > 0 {
			offsets[tp] = *next
		}
	}
	if err := h.producer.commit(ctx, offsets, h.group); err != nil {
		return fmt.Errorf("exactly-once pipe: commit: %w", err)
	}
	h.sent.Store(false)
	if err := h.producer.begin(); err != nil {
		return fmt.Errorf("exactly-once pipe: begin transaction: %w", err)
	}
	return nil
}

// copyBatch is how many records a claim copies under one read lock when they are there
// already: the lock is taken per batch, not per record, and a commit waits for one batch.
const copyBatch = 256

func (h *txnPipeHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	send := h.producer.sender()
	next := h.next[pipeline.TopicPartition{Topic: claim.Topic(), Partition: claim.Partition()}]
	msgs := claim.Messages()
	for {
		var msg *sarama.ConsumerMessage
		select {
		case m, ok := <-msgs:
			if !ok {
				return nil
			}
			msg = m
		case <-s.Context().Done():
			return nil
		}
		if h.failed.Load() != nil {
			return nil
		}
		h.mu.RLock()
		err := h.copy(send, next, msg)
		if err == nil {
			h.sent.Store(true)
		}
		for n := 1; err == nil && n < copyBatch; n++ {
			m := ready(msgs)
			if m == nil {
				break
			}
			err = h.copy(send, next, m)
		}
		h.mu.RUnlock()
		if err != nil {
			h.fail(fmt.Errorf("exactly-once pipe: send: %w", err))
			return err
		}
	}
}

// copy sends one record in the open transaction and notes its offset.
func (h *txnPipeHandler) copy(send func(*sarama.ConsumerMessage) error, next *int64, msg *sarama.ConsumerMessage) error {
	if err := send(msg); err != nil {
		return err
	}
	*next = msg.Offset + 1
	return nil
}

// ready returns the next record if the claim has one waiting, else nil.
func ready(msgs <-chan *sarama.ConsumerMessage) *sarama.ConsumerMessage {
	select {
	case m := <-msgs:
		return m
	default:
		return nil
	}
}
