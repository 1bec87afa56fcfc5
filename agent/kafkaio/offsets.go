package kafkaio

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Commit commits next offsets (last processed + 1) synchronously, in the current
// generation; it is valid from inside Revoking too. It fails when no generation is
// running, when a partition of the subscription is not assigned to this member, or when
// the coordinator refuses the commit (e.g. a rebalance is completing or the generation is
// gone). Partitions of other topics (Kafka Streams' internal topics the agent took over)
// are committed as given.
func (c *Consumer) Commit(offsets map[pipeline.TopicPartition]int64) error {
	if len(offsets) == 0 {
		return nil
	}
	c.mu.Lock()
	g, closed, topics := c.gen, c.closed, c.topics
	c.mu.Unlock()
	if g == nil {
		if closed {
			return fmt.Errorf("commit offsets of group %q: consumer is closed", c.groupID)
		}
		return fmt.Errorf("commit offsets of group %q: no active generation (rebalance in progress)", c.groupID)
	}

	req := sarama.NewOffsetCommitRequest(c.cfg, c.groupID)
	req.ConsumerGroupGeneration = c.generationID(g)
	req.ConsumerID = g.memberID
	if id := c.cfg.Consumer.Group.InstanceId; id != "" && req.Version >= 7 {
		req.GroupInstanceId = &id
	}
	for tp, off := range offsets {
		if _, ok := g.claims[tp]; !ok && slices.Contains(topics, tp.Topic) {
			return fmt.Errorf("commit offsets of group %q: %s/%d is not assigned in generation %d", c.groupID, tp.Topic, tp.Partition, g.id)
		}
		if off < 0 {
			return fmt.Errorf("commit offsets of group %q: %s/%d: negative offset %d", c.groupID, tp.Topic, tp.Partition, off)
		}
		req.AddBlockWithLeaderEpoch(tp.Topic, tp.Partition, off, -1, sarama.ReceiveTime, "")
	}

	coordinator, err := c.commits.Coordinator(c.groupID)
	if err != nil {
		return fmt.Errorf("commit offsets of group %q: find coordinator: %w", c.groupID, err)
	}
	resp, err := coordinator.CommitOffset(req)
	if err != nil {
		// The next call looks the coordinator up again instead of reusing a broken one.
		_ = c.commits.RefreshCoordinator(c.groupID)
		return fmt.Errorf("commit offsets of group %q (generation %d): %w", c.groupID, g.id, err)
	}
	var errs []error
	for topic, parts := range resp.Errors {
		for p, kerr := range parts {
			if kerr != sarama.ErrNoError {
				errs = append(errs, fmt.Errorf("%s/%d: %w", topic, p, kerr))
			}
		}
	}
	if len(errs) > 0 {
		if errors.Is(errs[0], sarama.ErrNotCoordinatorForConsumer) {
			_ = c.commits.RefreshCoordinator(c.groupID)
		}
		return fmt.Errorf("commit offsets of group %q (generation %d): %w", c.groupID, g.id, errors.Join(errs...))
	}
	return nil
}

// stableOffsetsWait bounds how long Committed waits for stable offsets: the Java consumer's
// bound for committed(), default.api.timeout.ms.
const stableOffsetsWait = 60 * time.Second

// Committed returns the committed offset of each partition, -1 where the group has none.
// It needs no generation: it reads what the group coordinator stores. A read_committed
// consumer asks for stable offsets (KIP-447, as the Java consumer does): while a
// transaction that commits offsets of these partitions is completing (committed, its
// markers not all written), the coordinator answers UNSTABLE_OFFSET_COMMIT instead of the
// offsets before it, which would have the member read again records whose outputs that
// transaction committed; Committed then asks again, for up to stableOffsetsWait.
func (c *Consumer) Committed(tps []pipeline.TopicPartition) (map[pipeline.TopicPartition]int64, error) {
	var committed map[pipeline.TopicPartition]CommittedOffset
	var err error
	if c.cfg.Consumer.IsolationLevel == sarama.ReadCommitted {
		ctx, cancel := context.WithTimeout(context.Background(), stableOffsetsWait)
		defer cancel()
		committed, err = c.CommittedStable(ctx, tps)
	} else {
		committed, err = c.committed(tps, false)
	}
	if err != nil {
		return nil, err
	}
	out := make(map[pipeline.TopicPartition]int64, len(committed))
	for tp, o := range committed {
		out[tp] = o.Offset
	}
	return out, nil
}

// CommittedOffset is a committed offset (-1: none) and the metadata committed with it (Kafka
// Streams writes each partition's stream time there; StoatFlow writes none).
type CommittedOffset struct {
	Offset   int64
	Metadata string
}

// CommittedStable is Committed once no transaction that commits offsets of the partitions
// is open (KIP-447's require_stable): a transaction of another producer, such as a Kafka
// Streams instance killed in the middle of one, may still commit or abort its offsets. It
// waits, asking again, until the transaction is over or ctx is done.
func (c *Consumer) CommittedStable(ctx context.Context, tps []pipeline.TopicPartition) (map[pipeline.TopicPartition]CommittedOffset, error) {
	wait := c.cfg.Metadata.Retry.Backoff
	for {
		out, err := c.committed(tps, true)
		if !errors.Is(err, sarama.ErrUnstableOffsetCommit) {
			return out, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (waited for an open transaction to end: %w)", err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// committed reads the committed offsets once; with stable, a partition whose offsets a
// transaction is still completing fails it with sarama.ErrUnstableOffsetCommit.
func (c *Consumer) committed(tps []pipeline.TopicPartition, stable bool) (map[pipeline.TopicPartition]CommittedOffset, error) {
	out := make(map[pipeline.TopicPartition]CommittedOffset, len(tps))
	if len(tps) == 0 {
		return out, nil
	}
	parts := make(map[string][]int32)
	for _, tp := range tps {
		parts[tp.Topic] = append(parts[tp.Topic], tp.Partition)
	}
	for _, ps := range parts {
		slices.Sort(ps)
	}
	req := sarama.NewOffsetFetchRequest(c.cfg.Version, c.groupID, parts)
	if stable {
		if req.Version < 7 {
			return nil, fmt.Errorf("committed offsets of group %q: stable offsets (a read_committed consumer, or waiting for open transactions) need OffsetFetch v7, Kafka 2.5; Kafka version %s is configured", c.groupID, c.cfg.Version)
		}
		req.RequireStable = true
	}
	coordinator, err := c.commits.Coordinator(c.groupID)
	if err != nil {
		return nil, fmt.Errorf("committed offsets of group %q: find coordinator: %w", c.groupID, err)
	}
	resp, err := coordinator.FetchOffset(req)
	if err != nil {
		_ = c.commits.RefreshCoordinator(c.groupID)
		return nil, fmt.Errorf("committed offsets of group %q: %w", c.groupID, err)
	}
	if kerr := resp.GroupError(); kerr != sarama.ErrNoError {
		return nil, fmt.Errorf("committed offsets of group %q: %w", c.groupID, kerr)
	}
	for _, tp := range tps {
		block := resp.GetBlock(tp.Topic, tp.Partition)
		switch {
		case block == nil:
			out[tp] = CommittedOffset{Offset: -1}
		case block.Err != sarama.ErrNoError:
			return nil, fmt.Errorf("committed offsets of group %q: %s/%d: %w", c.groupID, tp.Topic, tp.Partition, block.Err)
		default:
			out[tp] = CommittedOffset{Offset: block.Offset, Metadata: block.Metadata}
		}
	}
	return out, nil
}

// leaveStatic removes this static member from the group. sarama never sends LeaveGroup
// for a static member (KIP-345: a restart should find its partitions waiting), so a
// final shutdown has to say it itself, naming the instance id.
func (c *Consumer) leaveStatic(memberID string) error {
	instance := c.cfg.Consumer.Group.InstanceId
	if !c.cfg.Version.IsAtLeast(sarama.V2_4_0_0) {
		return fmt.Errorf("leave group %q as static member %q: needs Kafka version >= 2.4.0, have %s", c.groupID, instance, c.cfg.Version)
	}
	req := &sarama.LeaveGroupRequest{
		Version: 3,
		GroupId: c.groupID,
		Members: []sarama.MemberIdentity{{MemberId: memberID, GroupInstanceId: &instance}},
	}
	if c.cfg.Version.IsAtLeast(sarama.V3_2_0_0) {
		reason := "the application is shutting down"
		req.Version = 5
		req.Members[0].Reason = &reason
	}
	coordinator, err := c.client.Coordinator(c.groupID)
	if err != nil {
		return fmt.Errorf("leave group %q: find coordinator: %w", c.groupID, err)
	}
	resp, err := coordinator.LeaveGroup(req)
	if err != nil {
		return fmt.Errorf("leave group %q as static member %q: %w", c.groupID, instance, err)
	}
	if resp.Err != sarama.ErrNoError {
		return fmt.Errorf("leave group %q as static member %q: %w", c.groupID, instance, resp.Err)
	}
	for _, m := range resp.Members {
		// Unknown member: the coordinator already let it go (session timeout, fenced).
		if m.Err != sarama.ErrNoError && m.Err != sarama.ErrUnknownMemberId {
			return fmt.Errorf("leave group %q as static member %q: %w", c.groupID, instance, m.Err)
		}
	}
	return nil
}
