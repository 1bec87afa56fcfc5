package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// errMemberStopped is wrapped by the error a streams consumer stops with when its member
// stopped (a fatal heartbeat error, a shutdown the group asked for).
var errMemberStopped = errors.New("the streams group member stopped")

// NewStreamsConsumer makes a consumer of the active tasks a streams-group member runs: each
// of the member's reconciliations is a generation, as a classic group's rebalance is, so the
// caller's RebalanceHandler serves both. When the broker changes the member's tasks, the
// running generation ends (Revoking: the caller commits), the next one starts with the
// target's active tasks (Assigned; Tasks has its standby and warmup tasks), and only then is the reconciliation acknowledged, so the
// broker gives the revoked tasks to another member once their offsets are committed. A lost
// assignment (the member was fenced) ends the generation the same way; its commit is refused
// by the coordinator, which no longer knows the member's epoch, and the caller drops the
// epoch. partitions lists a task's partitions: its sub-topology's source and repartition
// topics' partition of the task's number. topics are every topic the tasks read.
//
// The member is dynamic: cfg's group.instance.id is not sent (static membership in a
// streams group is not supported yet). Offsets are committed in the member's current epoch.
func NewStreamsConsumer(brokers []string, member *StreamsMember, topics []string, partitions func(TaskID) []pipeline.TopicPartition,
	cfg *sarama.Config, maxPollRecords int, h RebalanceHandler) (*Consumer, error) {
	switch {
	case cfg == nil:
		return nil, errors.New("new streams consumer: nil sarama config")
	case member == nil:
		return nil, errors.New("new streams consumer: no streams group member")
	case maxPollRecords < 1:
		return nil, fmt.Errorf("new streams consumer: max.poll.records %d, want at least 1", maxPollRecords)
	case h == nil:
		return nil, errors.New("new streams consumer: nil rebalance handler")
	case len(topics) == 0:
		return nil, fmt.Errorf("new streams consumer %q: no topics to read", member.cfg.Group)
	}
	dynamic := *cfg
	dynamic.Consumer.Group.InstanceId = ""
	c, err := newConsumer(brokers, member.cfg.Group, topics, &dynamic, maxPollRecords, h, func(c *Consumer) (groupRunner, error) {
		pc, err := sarama.NewConsumerFromClient(c.client)
		if err != nil {
			return nil, err
		}
		return &streamsGroup{c: c, member: member, partitions: partitions, consumer: pc, errs: make(chan error, c.cfg.ChannelBufferSize), tasks: emptyAssignment()}, nil
	})
	if err != nil {
		return nil, err
	}
	c.member = member
	return c, nil
}

// streamsGroup runs a streams consumer's generations from its member's reconciliations.
type streamsGroup struct {
	c          *Consumer
	member     *StreamsMember
	partitions func(TaskID) []pipeline.TopicPartition
	consumer   sarama.Consumer
	errs       chan error
	closeOnce  sync.Once

	mu    sync.Mutex
	tasks Assignment // the running generation's
}

// Tasks are the streams-group member's tasks in the running generation (the last one
// between generations): the active tasks whose partitions the generation reads, and the
// standby and warmup tasks the application keeps caught up from their changelogs. It is set
// before the generation's Assigned, so the handler reads the generation's own. Empty outside
// a streams group.
func (c *Consumer) Tasks() Assignment {
	c.mu.Lock()
	g, ok := c.group.(*streamsGroup)
	c.mu.Unlock()
	if !ok {
		return emptyAssignment()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.tasks
}

// Consume runs one generation: the member's pending reconciliation if one waits, else what
// the application runs already (after a Rewind), until ctx ends, a new reconciliation
// waits, or the member stops.
func (g *streamsGroup) Consume(ctx context.Context, _ []string, handler sarama.ConsumerGroupHandler) error {
	if err := g.stopped(); err != nil {
		return err
	}
	r := g.member.Pending()
	tasks := g.member.Assignment()
	if r != nil {
		tasks = r.Target
	}
	g.mu.Lock()
	g.tasks = tasks
	g.mu.Unlock()
	var tps []pipeline.TopicPartition
	for _, t := range tasks.Active {
		tps = append(tps, g.partitions(t)...)
	}
	slices.SortFunc(tps, compareTP)
	tps = slices.Compact(tps)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sess := &streamsSession{ctx: sctx, member: g.member.MemberID(), epoch: g.member.Epoch(), claims: map[string][]int32{}, marked: map[pipeline.TopicPartition]int64{}}
	for _, tp := range tps {
		sess.claims[tp.Topic] = append(sess.claims[tp.Topic], tp.Partition)
	}
	if err := handler.Setup(sess); err != nil {
		return err
	}
	if r != nil {
		g.member.Reconciled(r)
	}
	// claims are the session handler's ConsumeClaim calls; forwards the goroutines passing
	// the partition consumers' errors on, which end once those are closed.
	var claims, forwards sync.WaitGroup
	var pcs []sarama.PartitionConsumer
	err := g.startClaims(sess, tps, handler, &claims, &forwards, &pcs)
	if err == nil {
		err = g.wait(sctx)
	}
	cancel()
	claims.Wait()
	for _, pc := range pcs {
		pc.AsyncClose()
	}
	for _, pc := range pcs {
		for range pc.Messages() {
		}
	}
	forwards.Wait()
	return errors.Join(err, handler.Cleanup(sess))
}

// startClaims starts reading each partition from its committed offset (or where Setup
// marked it, or the consumer's initial offset when the group has none).
func (g *streamsGroup) startClaims(sess *streamsSession, tps []pipeline.TopicPartition, handler sarama.ConsumerGroupHandler,
	claims, forwards *sync.WaitGroup, pcs *[]sarama.PartitionConsumer) error {
	committed, err := g.c.Committed(tps)
	if err != nil {
		return err
	}
	for _, tp := range tps {
		off, ok := sess.start(tp)
		if !ok {
			off = committed[tp]
		}
		if off < 0 {
			off = g.c.cfg.Consumer.Offsets.Initial
		}
		pc, err := g.consumer.ConsumePartition(tp.Topic, tp.Partition, off)
		if err != nil {
			return fmt.Errorf("read %s-%d from offset %d: %w", tp.Topic, tp.Partition, off, err)
		}
		*pcs = append(*pcs, pc)
		claim := &streamsClaim{tp: tp, initial: off, pc: pc}
		claims.Add(1)
		forwards.Add(1)
		go func() {
			defer forwards.Done()
			for err := range pc.Errors() {
				g.report(err)
			}
		}()
		go func() {
			defer claims.Done()
			if err := handler.ConsumeClaim(sess, claim); err != nil {
				g.report(err)
			}
		}()
	}
	return nil
}

// wait waits for the generation's end: ctx ends, a new reconciliation waits, or the member
// stops.
func (g *streamsGroup) wait(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-g.member.Done():
			return g.stopped()
		case <-g.member.Changed():
			if g.member.Pending() != nil {
				return nil
			}
		}
	}
}

// stopped is the member's error once it stopped, nil while it runs.
func (g *streamsGroup) stopped() error {
	select {
	case <-g.member.Done():
	default:
		return nil
	}
	if err := g.member.Err(); err != nil {
		return fmt.Errorf("%w: %w", errMemberStopped, err)
	}
	return fmt.Errorf("%w: it left the group", errMemberStopped)
}

func (g *streamsGroup) report(err error) {
	select {
	case g.errs <- err:
	default:
	}
}

func (g *streamsGroup) Errors() <-chan error { return g.errs }

// Close closes the partition consumers' consumer; the Consumer closes the client and the
// caller the member.
func (g *streamsGroup) Close() error {
	var err error
	g.closeOnce.Do(func() {
		err = g.consumer.Close()
		close(g.errs)
	})
	return err
}

// streamsSession is a streams consumer's generation as sarama's session interface shows it
// to the session handler.
type streamsSession struct {
	ctx    context.Context
	member string
	epoch  int32
	claims map[string][]int32

	mu     sync.Mutex
	marked map[pipeline.TopicPartition]int64 // where Setup placed partitions without a committed offset
}

func (s *streamsSession) Claims() map[string][]int32 { return s.claims }
func (s *streamsSession) MemberID() string           { return s.member }
func (s *streamsSession) GenerationID() int32        { return s.epoch }
func (s *streamsSession) Context() context.Context   { return s.ctx }

// MarkOffset places a partition's start: the session handler marks where a partition
// without a committed offset starts, before its claim starts. Offsets are committed by the
// Consumer's Commit (or the transaction), never by the session.
func (s *streamsSession) MarkOffset(topic string, partition int32, offset int64, _ string) {
	s.mu.Lock()
	s.marked[pipeline.TopicPartition{Topic: topic, Partition: partition}] = offset
	s.mu.Unlock()
}

// ResetOffset places a partition's start, as MarkOffset.
func (s *streamsSession) ResetOffset(topic string, partition int32, offset int64, metadata string) {
	s.MarkOffset(topic, partition, offset, metadata)
}

// MarkMessage places a partition's start after msg, as MarkOffset.
func (s *streamsSession) MarkMessage(msg *sarama.ConsumerMessage, metadata string) {
	s.MarkOffset(msg.Topic, msg.Partition, msg.Offset+1, metadata)
}

// Commit does nothing: the session never commits (the Consumer's Commit does).
func (s *streamsSession) Commit() {}

func (s *streamsSession) start(tp pipeline.TopicPartition) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	off, ok := s.marked[tp]
	return off, ok
}

// streamsClaim is one partition of a streams consumer's generation.
type streamsClaim struct {
	tp      pipeline.TopicPartition
	initial int64
	pc      sarama.PartitionConsumer
}

func (c *streamsClaim) Topic() string                            { return c.tp.Topic }
func (c *streamsClaim) Partition() int32                         { return c.tp.Partition }
func (c *streamsClaim) InitialOffset() int64                     { return c.initial }
func (c *streamsClaim) HighWaterMarkOffset() int64               { return c.pc.HighWaterMarkOffset() }
func (c *streamsClaim) Messages() <-chan *sarama.ConsumerMessage { return c.pc.Messages() }
