package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// RebalanceHandler is told when a generation of the group starts and ends.
type RebalanceHandler interface {
	// Assigned is called when a generation starts, before any of its messages are delivered.
	Assigned(tps []pipeline.TopicPartition)
	// Revoking is called when the generation ends (sarama's Cleanup), before partitions are
	// given up. The caller finishes its commit (calling Commit) before returning. After
	// Revoking returns, no message fetched in the ended generation is delivered any more.
	Revoking(tps []pipeline.TopicPartition)
}

// Consumer is a member of a classic consumer group with the eager rebalance protocol.
// It never commits on its own: offsets are committed only by Commit.
type Consumer struct {
	client sarama.Client
	// commits is the client offsets are committed and read through: a connection of its own
	// to the group coordinator, as the Java consumer keeps. On the fetches' connection a
	// commit would wait behind a fetch the broker holds for up to fetch.max.wait.ms when the
	// coordinator leads a fetched partition too (a broker answers a connection's requests in
	// order).
	commits sarama.Client
	group   groupRunner
	groupID string
	// member is the streams-group member whose tasks the consumer reads (NewStreamsConsumer),
	// nil in a classic group: offsets are committed in its current epoch.
	member   *StreamsMember
	cfg      *sarama.Config
	handler  RebalanceHandler
	maxBatch int // the most messages of one batch (max.poll.records)
	out      chan []pipeline.SourceRecord
	errs     chan error
	forwards sync.WaitGroup // the goroutine forwarding sarama's errors

	mu         sync.Mutex
	topics     []string    // the subscription (Subscribe changes it)
	gen        *generation // the running generation; nil between generations
	lastMember string      // member id of the latest generation, for a static LeaveGroup
	started    bool
	closed     bool
	cancel     context.CancelFunc
	endSession context.CancelFunc // ends the running session only (Rewind)
	loopDone   chan struct{}
	// replaced is closed when another member took this member's group.instance.id;
	// replacedErr says so.
	replaced    chan struct{}
	replacedErr error
	// failed is closed when a generation cannot start for a reason joining again does not
	// change (a partition without a committed offset whose policy is none, a group whose
	// members speak another assignment protocol); failedErr says so.
	failed    chan struct{}
	failedErr error
	// reset is where each topic's partitions without a committed offset start; nil: sarama's
	// Consumer.Offsets.Initial for every topic.
	reset func(topic string) pipeline.OffsetReset
}

// NewConsumer prepares a member of group groupID subscribed to topics, connected with a
// copy of cfg, that hands over batches of at most maxPollRecords messages. The copy always
// returns errors (see Errors) and never auto-commits; it must use eager balance
// strategies, because Assigned and Revoking describe whole generations.
// cfg.Consumer.Group.InstanceId makes the member static (it needs Version >= 2.3.0).
func NewConsumer(brokers []string, groupID string, topics []string, cfg *sarama.Config, maxPollRecords int, h RebalanceHandler) (*Consumer, error) {
	switch {
	case cfg == nil:
		return nil, errors.New("new consumer: nil sarama config")
	case maxPollRecords < 1:
		return nil, fmt.Errorf("new consumer: max.poll.records %d, want at least 1", maxPollRecords)
	case h == nil:
		return nil, errors.New("new consumer: nil rebalance handler")
	case groupID == "":
		return nil, errors.New("new consumer: empty group id")
	case len(topics) == 0:
		return nil, fmt.Errorf("new consumer %q: no topics to subscribe to", groupID)
	}
	if err := checkEager(cfg); err != nil {
		return nil, fmt.Errorf("new consumer %q: %w", groupID, err)
	}
	if cfg.Consumer.Group.InstanceId != "" && !cfg.Version.IsAtLeast(sarama.V2_3_0_0) {
		return nil, fmt.Errorf("new consumer %q: group.instance.id %q needs Kafka version >= 2.3.0, have %s",
			groupID, cfg.Consumer.Group.InstanceId, cfg.Version)
	}
	return newConsumer(brokers, groupID, topics, cfg, maxPollRecords, h, func(c *Consumer) (groupRunner, error) {
		return sarama.NewConsumerGroupFromClient(groupID, c.client)
	})
}

// groupRunner runs the consumer's generations: sarama's consumer group in a classic group,
// a streamsGroup in a streams group.
type groupRunner interface {
	Consume(ctx context.Context, topics []string, handler sarama.ConsumerGroupHandler) error
	Errors() <-chan error
	Close() error
}

// newConsumer makes a consumer whose generations group runs.
func newConsumer(brokers []string, groupID string, topics []string, cfg *sarama.Config, maxPollRecords int, h RebalanceHandler,
	group func(*Consumer) (groupRunner, error)) (*Consumer, error) {
	c := *cfg
	c.Consumer.Return.Errors = true
	// Offsets are committed by Commit alone; sarama would commit what resolveStarts marks.
	c.Consumer.Offsets.AutoCommit.Enable = false

	client, err := sarama.NewClient(brokers, &c)
	if err != nil {
		return nil, fmt.Errorf("new consumer %q: connect to %v: %w", groupID, brokers, err)
	}
	cc := c
	cc.Metadata.Full = false // it needs the coordinator, no topic's metadata
	commits, err := sarama.NewClient(brokers, &cc)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("new consumer %q: connect to %v for offset commits: %w", groupID, brokers, err)
	}
	cons := &Consumer{
		client:   client,
		commits:  commits,
		groupID:  groupID,
		topics:   append([]string(nil), topics...),
		cfg:      &c,
		handler:  h,
		maxBatch: maxPollRecords,
		out:      make(chan []pipeline.SourceRecord, 4),
		errs:     make(chan error, c.ChannelBufferSize),
		replaced: make(chan struct{}),
		failed:   make(chan struct{}),
	}
	if cons.group, err = group(cons); err != nil {
		_ = client.Close()
		_ = commits.Close()
		return nil, fmt.Errorf("new consumer %q: %w", groupID, err)
	}
	cons.forwards.Add(1)
	go cons.forwardErrors(cons.group)
	return cons, nil
}

// checkEager refuses cooperative balance strategies: with them sarama keeps a session
// across rebalances and Revoking could not describe the end of a generation.
func checkEager(cfg *sarama.Config) error {
	strategies := cfg.Consumer.Group.Rebalance.GroupStrategies
	for _, s := range strategies {
		ps, ok := s.(sarama.RebalanceProtocolBalanceStrategy)
		if !ok {
			continue
		}
		eager := false
		for _, p := range ps.SupportedProtocols() {
			eager = eager || p == sarama.RebalanceProtocolEager
		}
		if !eager {
			return fmt.Errorf("not supported yet: cooperative rebalancing (balance strategy %q)", s.Name())
		}
	}
	return nil
}

// Start runs the group loop in the background: it joins the group, consumes until the
// generation ends, and joins again, until ctx ends or Close is called. Calls after the
// first do nothing.
func (c *Consumer) Start(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.closed {
		return
	}
	c.started = true
	ctx, c.cancel = context.WithCancel(ctx)
	c.loopDone = make(chan struct{})
	go c.loop(ctx)
}

func (c *Consumer) loop(ctx context.Context) {
	defer close(c.loopDone)
	h := &sessionHandler{c: c}
	var fenced time.Time // when the group.instance.id was last fenced
	for ctx.Err() == nil {
		session, endSession := context.WithCancel(ctx)
		c.mu.Lock()
		c.endSession = endSession
		c.mu.Unlock()
		c.mu.Lock()
		topics := c.topics
		c.mu.Unlock()
		err := c.group.Consume(session, topics, h)
		rewound := session.Err() != nil
		endSession()
		if err == nil {
			continue
		}
		if errors.Is(err, sarama.ErrClosedConsumerGroup) {
			return
		}
		if errors.Is(err, sarama.ErrFencedInstancedId) && time.Since(fenced) > c.cfg.Consumer.Group.Session.Timeout {
			// The coordinator holds this member's group.instance.id under another member
			// id. After a coordinator moved or the cluster restarted, that can be an id of
			// this very member (a join whose answer was lost, a group reloaded from before
			// the last join): join again once as a new member, which takes the id back.
			fenced = time.Now()
			c.report(fmt.Errorf("consumer group %q: group.instance.id %q fenced; joining again as a new member "+
				"(a second fencing within session.timeout.ms means another member took the id): %w", c.groupID, c.cfg.Consumer.Group.InstanceId, err))
			if err := c.renewGroup(); err != nil {
				c.failedErr = fmt.Errorf("consumer group %q: join again as a new member: %w", c.groupID, err)
				close(c.failed)
				return
			}
			continue
		}
		if errors.Is(err, sarama.ErrFencedInstancedId) {
			// Another member joined with this member's group.instance.id and took its
			// place: it fenced this one again after it joined anew, and joining again
			// would take it back and fence that member in turn. The Java consumer stops
			// the same way (FencedInstanceIdException).
			c.replacedErr = fmt.Errorf("consumer group %q: another member joined with group.instance.id %q and replaced this one: %w",
				c.groupID, c.cfg.Consumer.Group.InstanceId, err)
			close(c.replaced)
			return
		}
		if errors.Is(err, ErrNoOffset) || errors.Is(err, errMemberStopped) {
			c.failedErr = fmt.Errorf("consumer group %q: %w", c.groupID, err)
			close(c.failed)
			return
		}
		if errors.Is(err, sarama.ErrInconsistentGroupProtocol) {
			// Joining again would be refused again, and the members the group has keep
			// running: this member stops instead of waiting forever.
			c.failedErr = fmt.Errorf("consumer group %q refused this member (INCONSISTENT_GROUP_PROTOCOL): its members speak another assignment protocol than this one's %v, "+
				"so another client (a Kafka Streams instance of the application, an older StoatFlow agent, another consumer) uses the group %q; StoatFlow never splits the partitions of an application between agents: "+
				"stop the other members (one stopped without leaving the group, or killed, stays a member until its session.timeout.ms has passed) "+
				"or give this agent another application.id: %w",
				c.groupID, strategyNames(c.cfg), c.groupID, err)
			close(c.failed)
			return
		}
		if rewound && ctx.Err() == nil {
			// Rewind ended the session on purpose: join again at once.
			continue
		}
		c.report(fmt.Errorf("consumer group %q: %w", c.groupID, err))
		// Joining failed (no coordinator, missing topic, ...): wait before trying again.
		t := time.NewTimer(c.cfg.Consumer.Group.Rebalance.Retry.Backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// GroupMetadata names this member in its running generation, for the offsets of a
// transaction (Producer.CommitTxnInGroup); between generations the generation is -1 and
// the coordinator does not check it.
func (c *Consumer) GroupMetadata() *sarama.ConsumerGroupMetadata {
	m := sarama.NewConsumerGroupMetadata(c.groupID)
	if id := c.cfg.Consumer.Group.InstanceId; id != "" {
		m.GroupInstanceID = &id
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != nil {
		m.GenerationID, m.MemberID = c.generationID(c.gen), c.gen.memberID
	}
	return m
}

// generationID is the generation g's offsets are committed in: its own in a classic group;
// in a streams group the member's current epoch, which the coordinator checks offsets
// against (a new assignment bumps it before the revoked tasks are committed).
func (c *Consumer) generationID(g *generation) int32 {
	if c.member != nil {
		return c.member.Epoch()
	}
	return g.id
}

// Replaced is closed when another member joined the group with this member's
// group.instance.id and took its place; the member stops joining and ReplacedErr says so.
func (c *Consumer) Replaced() <-chan struct{} { return c.replaced }

// ReplacedErr is the error of Replaced; nil until it is closed.
func (c *Consumer) ReplacedErr() error {
	select {
	case <-c.replaced:
		return c.replacedErr
	default:
		return nil
	}
}

// Failed is closed when the member stopped joining because a generation cannot start
// (FailedErr says why), as the Java consumer's NoOffsetForPartitionException stops a
// Kafka Streams thread.
func (c *Consumer) Failed() <-chan struct{} { return c.failed }

// FailedErr is the error of Failed; nil until it is closed.
func (c *Consumer) FailedErr() error {
	select {
	case <-c.failed:
		return c.failedErr
	default:
		return nil
	}
}

func strategyNames(cfg *sarama.Config) []string {
	var names []string
	for _, s := range cfg.Consumer.Group.Rebalance.GroupStrategies {
		names = append(names, s.Name())
	}
	return names
}

// Messages returns batches of records of one partition each, in offset order. The
// channel has room for few batches: a caller that does not read stops the fetching. It
// is closed by Close.
func (c *Consumer) Messages() <-chan []pipeline.SourceRecord { return c.out }

// Errors returns asynchronous errors: failed joins, fetches and the like. Errors are
// dropped while the channel is full. It is closed by Close.
func (c *Consumer) Errors() <-chan error { return c.errs }

func (c *Consumer) report(err error) {
	select {
	case c.errs <- err:
	default:
	}
}

func (c *Consumer) forwardErrors(group groupRunner) {
	defer c.forwards.Done()
	for err := range group.Errors() {
		c.report(err)
	}
}

// renewGroup replaces the sarama group, which keeps its member id across joins, by a new
// one on the same client: its next join is a new member's. The group loop calls it between
// sessions; a static member leaves nothing behind (sarama sends no LeaveGroup for it).
func (c *Consumer) renewGroup() error {
	_ = c.group.Close()
	group, err := sarama.NewConsumerGroupFromClient(c.groupID, c.client)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.group = group
	c.mu.Unlock()
	c.forwards.Add(1)
	go c.forwardErrors(group)
	return nil
}

// Close stops the group loop, which ends the running generation (Revoking is called),
// and closes the connections. A static member (group.instance.id set) stays in the group
// when leaveGroup is false, so a restart takes its partitions back without a rebalance;
// leaveGroup true sends a LeaveGroup with the instance id, which needs Version >= 2.4.0.
// A dynamic member always leaves: its member id cannot be reused anyway.
func (c *Consumer) Close(leaveGroup bool) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	started := c.started
	c.mu.Unlock()

	if started {
		c.cancel()
		<-c.loopDone
	}
	var errs []error
	if err := c.group.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close consumer group %q: %w", c.groupID, err))
	}
	c.forwards.Wait()
	// A replaced member has nothing to leave: the instance id is the other member's now.
	if leaveGroup && c.cfg.Consumer.Group.InstanceId != "" && c.ReplacedErr() == nil {
		c.mu.Lock()
		member := c.lastMember
		c.mu.Unlock()
		if member != "" {
			if err := c.leaveStatic(member); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := c.client.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close consumer client: %w", err))
	}
	if err := c.commits.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close consumer client for offset commits: %w", err))
	}
	close(c.out)
	close(c.errs)
	return errors.Join(errs...)
}
