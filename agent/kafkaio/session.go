package kafkaio

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// generation is one generation of the group as this member sees it.
type generation struct {
	id       int32
	memberID string
	tps      []pipeline.TopicPartition
	claims   map[pipeline.TopicPartition]*claimState
	// ended is closed once no message of the generation can reach the caller any more:
	// every claim has stopped and the Messages channel is drained.
	ended chan struct{}
	// claimsStarted is set when sarama starts fetching one of its partitions, which it does
	// only once Setup (and so Assigned) returned.
	claimsStarted atomic.Bool
}

// claimState tracks how far one assigned partition has been handed to the caller.
type claimState struct {
	// claim is set once sarama starts fetching the partition; nil before.
	claim atomic.Pointer[sarama.ConsumerGroupClaim]
	// next is the offset after the last message put in the Messages channel.
	next atomic.Int64
}

// sessionHandler adapts sarama's session callbacks to the Consumer.
//
// No batch of an ended generation reaches the caller after Revoking: sarama calls Cleanup
// only once every ConsumeClaim has returned, so no new batch can be queued, and Cleanup
// empties the channel before it calls Revoking. Messages left behind are fetched again
// from the committed offsets by whoever owns the partition next.
type sessionHandler struct{ c *Consumer }

func (h *sessionHandler) Setup(sess sarama.ConsumerGroupSession) error {
	g := &generation{
		id:       sess.GenerationID(),
		memberID: sess.MemberID(),
		claims:   make(map[pipeline.TopicPartition]*claimState),
		ended:    make(chan struct{}),
	}
	for topic, parts := range sess.Claims() {
		for _, p := range parts {
			tp := pipeline.TopicPartition{Topic: topic, Partition: p}
			g.tps = append(g.tps, tp)
			g.claims[tp] = new(claimState)
		}
	}
	slices.SortFunc(g.tps, compareTP)
	if err := h.c.resolveStarts(sess, g.tps); err != nil {
		return err
	}
	h.c.mu.Lock()
	h.c.gen = g
	h.c.lastMember = g.memberID
	h.c.mu.Unlock()
	h.c.handler.Assigned(slices.Clone(g.tps))
	return nil
}

func (h *sessionHandler) Cleanup(sarama.ConsumerGroupSession) error {
	h.c.mu.Lock()
	g := h.c.gen
	h.c.mu.Unlock()
	if g == nil {
		return nil
	}
	for drained := false; !drained; {
		select {
		case <-h.c.out:
		default:
			drained = true
		}
	}
	close(g.ended)
	h.c.handler.Revoking(slices.Clone(g.tps))
	h.c.mu.Lock()
	h.c.gen = nil
	h.c.mu.Unlock()
	return nil
}

func (h *sessionHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	tp := pipeline.TopicPartition{Topic: claim.Topic(), Partition: claim.Partition()}
	h.c.mu.Lock()
	var cs *claimState
	if h.c.gen != nil {
		cs = h.c.gen.claims[tp]
		h.c.gen.claimsStarted.Store(true)
	}
	h.c.mu.Unlock()
	if cs == nil {
		// sarama runs only the claims Setup saw; a stray one is delivered all the same,
		// only Lag does not know it.
		cs = new(claimState)
	}
	cs.next.Store(h.c.startOffset(claim))
	cs.claim.Store(&claim)

	done := sess.Context().Done()
	msgs := claim.Messages()
	for {
		var first *sarama.ConsumerMessage
		select {
		case m, ok := <-msgs:
			if !ok {
				return nil
			}
			first = m
		case <-done:
			return nil
		}
		batch := make([]pipeline.SourceRecord, 0, min(h.c.maxBatch, 1+len(msgs)))
		batch = appendMessage(batch, first)
	fill:
		for len(batch) < h.c.maxBatch {
			select {
			case m, ok := <-msgs:
				if !ok {
					break fill
				}
				batch = appendMessage(batch, m)
			default:
				break fill
			}
		}
		select {
		case h.c.out <- batch:
			cs.next.Store(batch[len(batch)-1].Offset + 1)
		case <-done:
			return nil
		}
	}
}

// startOffset resolves where the claim starts: the committed offset, or the log start or
// end when the group has none for the partition (Consumer.Offsets.Initial).
func (c *Consumer) startOffset(claim sarama.ConsumerGroupClaim) int64 {
	switch off := claim.InitialOffset(); off {
	case sarama.OffsetNewest:
		// sarama read the high-water mark when it resolved the start.
		return claim.HighWaterMarkOffset()
	case sarama.OffsetOldest:
		oldest, err := c.client.GetOffset(claim.Topic(), claim.Partition(), sarama.OffsetOldest)
		if err != nil {
			c.report(fmt.Errorf("consumer group %q: log start of %s/%d: %w", c.groupID, claim.Topic(), claim.Partition(), err))
			return 0
		}
		return oldest
	default:
		return off
	}
}

func appendMessage(batch []pipeline.SourceRecord, m *sarama.ConsumerMessage) []pipeline.SourceRecord {
	var headers pipeline.Headers
	if len(m.Headers) > 0 {
		headers = make(pipeline.Headers, len(m.Headers))
		for i, h := range m.Headers {
			headers[i] = pipeline.Header{Key: string(h.Key), Value: h.Value}
		}
	}
	return append(batch, pipeline.SourceRecord{
		Topic:     m.Topic,
		Partition: m.Partition,
		Offset:    m.Offset,
		Key:       m.Key,
		Value:     m.Value,
		Headers:   headers,
		Timestamp: m.Timestamp.UnixMilli(),
	})
}

func compareTP(a, b pipeline.TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// Positions returns, per assigned partition whose fetching has started, the next offset to
// hand to the caller: how far it has read, which moves as records arrive.
func (c *Consumer) Positions() map[pipeline.TopicPartition]int64 {
	c.mu.Lock()
	g := c.gen
	c.mu.Unlock()
	pos := make(map[pipeline.TopicPartition]int64)
	if g == nil {
		return pos
	}
	for tp, cs := range g.claims {
		if cs.claim.Load() != nil {
			pos[tp] = cs.next.Load()
		}
	}
	return pos
}

// Lag returns, per assigned partition whose fetching has started, the high-water mark
// minus the next offset to hand to the caller: 0 means every message written so far is
// in the Messages channel or already received.
func (c *Consumer) Lag() map[pipeline.TopicPartition]int64 {
	c.mu.Lock()
	g := c.gen
	c.mu.Unlock()
	lag := make(map[pipeline.TopicPartition]int64)
	if g == nil {
		return lag
	}
	for tp, cs := range g.claims {
		claim := cs.claim.Load()
		if claim == nil {
			continue
		}
		lag[tp] = max(0, (*claim).HighWaterMarkOffset()-cs.next.Load())
	}
	return lag
}
