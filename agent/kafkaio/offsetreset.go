package kafkaio

import (
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// ErrNoOffset is the failure of a partition without a committed offset whose reset policy
// is none (Kafka's NoOffsetForPartitionException).
var ErrNoOffset = errors.New("no committed offset and the offset reset policy is none")

// SetOffsetReset says where each topic's partitions without a committed offset start
// (Kafka Streams' per-source Consumed.withOffsetResetPolicy over auto.offset.reset): reset
// returns the policy of a topic. Call it before Start.
func (c *Consumer) SetOffsetReset(reset func(topic string) pipeline.OffsetReset) {
	c.reset = reset
}

// resolveStarts places each claimed partition that has no committed offset, and whose
// policy sarama's Consumer.Offsets.Initial does not already carry out, where its policy
// says: the log start or end, or the first offset at most Duration old (a ListOffsets by
// timestamp, the log end when no record is that recent). Marking the offset in the
// session before the claims start makes sarama fetch from there; with auto-commit off
// nothing is committed until the agent commits. A partition whose policy is none fails
// the generation with ErrNoOffset, naming it.
func (c *Consumer) resolveStarts(sess sarama.ConsumerGroupSession, tps []pipeline.TopicPartition) error {
	if c.reset == nil {
		return nil
	}
	initial := pipeline.ResetEarliest
	if c.cfg.Consumer.Offsets.Initial == sarama.OffsetNewest {
		initial = pipeline.ResetLatest
	}
	var todo []pipeline.TopicPartition
	for _, tp := range tps {
		if s := c.reset(tp.Topic).Strategy; s != pipeline.ResetDefault && s != initial {
			todo = append(todo, tp)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	committed, err := c.Committed(todo)
	if err != nil {
		return err
	}
	for _, tp := range todo {
		if committed[tp] >= 0 {
			continue
		}
		policy := c.reset(tp.Topic)
		var off int64
		switch policy.Strategy {
		case pipeline.ResetNone:
			return fmt.Errorf("source topic-partition %s-%d: %w (set auto.offset.reset or the source's offsetReset)", tp.Topic, tp.Partition, ErrNoOffset)
		case pipeline.ResetEarliest:
			off, err = c.client.GetOffset(tp.Topic, tp.Partition, sarama.OffsetOldest)
		case pipeline.ResetLatest:
			off, err = c.client.GetOffset(tp.Topic, tp.Partition, sarama.OffsetNewest)
		case pipeline.ResetByDuration:
			since := time.Now().UnixMilli() - policy.Duration
			if off, err = c.client.GetOffset(tp.Topic, tp.Partition, since); err == nil && off < 0 {
				off, err = c.client.GetOffset(tp.Topic, tp.Partition, sarama.OffsetNewest)
			}
		}
		if err != nil {
			return fmt.Errorf("start of %s-%d (offset reset %s): %w", tp.Topic, tp.Partition, policy.Strategy, err)
		}
		sess.MarkOffset(tp.Topic, tp.Partition, off, "")
	}
	return nil
}
