package kafkaio

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Commit commits next offsets (last processed + 1) synchronously, in the current
// generation; it is valid from inside Revoking too. It fails when no generation is
// running, when a partition is not assigned to this member, or when the coordinator
// refuses the commit (e.g. a rebalance is completing or the generation is gone).
func (c *Consumer) Commit(offsets map[pipeline.TopicPartition]int64) error {
	if len(offsets) == 0 {
		return nil
	}
	c.mu.Lock()
	g, closed := c.gen, c.closed
	c.mu.Unlock()
	if g == nil {
		if closed {
			return fmt.Errorf("commit offsets of group %q: consumer is closed", c.groupID)
		}
		return fmt.Errorf("commit offsets of group %q: no active generation (rebalance in progress)", c.groupID)
	}

	req := sarama.NewOffsetCommitRequest(c.cfg, c.groupID)
	req.ConsumerGroupGeneration = g.id
	req.ConsumerID = g.memberID
	if id := c.cfg.Consumer.Group.InstanceId; id != "" && req.Version >= 7 {
		req.GroupInstanceId = &id
	}
	for tp, off := range offsets {
		if _, ok := g.claims[tp]; !ok {
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
	out := make(map[pipeline.TopicPartition]int64, len(tps))
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
	stable := c.cfg.Consumer.IsolationLevel == sarama.ReadCommitted
	if stable && req.Version < 7 {
		return nil, fmt.Errorf("committed offsets of group %q: a read_committed consumer needs stable offsets (OffsetFetch v7, Kafka 2.5); Kafka version %s is configured", c.groupID, c.cfg.Version)
	}
	req.RequireStable = stable
	deadline := time.Now().Add(stableOffsetsWait)
	for {
		resp, err := c.fetchOffsets(req)
		if err != nil {
			return nil, err
		}
		unstable := false
		for _, tp := range tps {
			block := resp.GetBlock(tp.Topic, tp.Partition)
			switch {
			case block == nil:
				out[tp] = -1
			case block.Err == sarama.ErrUnstableOffsetCommit:
				unstable = true
			case block.Err != sarama.ErrNoError:
				return nil, fmt.Errorf("committed offsets of group %q: %s/%d: %w", c.groupID, tp.Topic, tp.Partition, block.Err)
			default:
				out[tp] = block.Offset
			}
		}
		if !unstable {
			return out, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("committed offsets of group %q: a transaction committing them did not complete within %v: %w", c.groupID, stableOffsetsWait, sarama.ErrUnstableOffsetCommit)
		}
		time.Sleep(c.cfg.Metadata.Retry.Backoff)
	}
}

// fetchOffsets sends req to the group's coordinator.
func (c *Consumer) fetchOffsets(req *sarama.OffsetFetchRequest) (*sarama.OffsetFetchResponse, error) {
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
	return resp, nil
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
