package kafkaio

import (
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// brokerSender sends the batches of the partitions one broker leads, one produce request
// at a time: what is sent while a request is in flight waits for the next one, which keeps
// a partition's batches in order under idempotence and makes the batches big under load.
type brokerSender struct {
	p      *Producer
	broker *sarama.Broker // guarded by p.mu
	ready  []*partition   // partitions with batches to send, not busy; guarded by p.mu
	wake   chan struct{}
	done   []*outMsg // acknowledged messages not yet handed back (msgRecycler)
}

// signal wakes the sender unless a wake-up is pending already.
func (s *brokerSender) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// senderLocked returns the sender of broker b, starting it on first use. p.mu is held.
func (p *Producer) senderLocked(b *sarama.Broker) *brokerSender {
	if s, ok := p.senders[b.ID()]; ok {
		s.broker = b // metadata may have replaced the broker's connection object
		return s
	}
	s := &brokerSender{p: p, broker: b, wake: make(chan struct{}, 1)}
	p.senders[b.ID()] = s
	p.wg.Add(1)
	go s.run()
	return s
}

func (s *brokerSender) run() {
	p := s.p
	defer p.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var batches []*batch
	for {
		select {
		case <-s.wake:
		case <-timer.C:
		case <-p.stop:
			return
		}
		for {
			var next time.Time
			batches, next = p.collect(s, batches[:0])
			if len(batches) == 0 {
				if !next.IsZero() {
					timer.Reset(time.Until(next))
				}
				break
			}
			s.send(batches)
			clear(batches)
		}
	}
}

// retriableProduceErrors are the produce errors that a refreshed leader or a later try
// can cure.
var retriableProduceErrors = map[sarama.KError]bool{
	sarama.ErrUnknownTopicOrPartition:      true,
	sarama.ErrLeaderNotAvailable:           true,
	sarama.ErrNotLeaderForPartition:        true,
	sarama.ErrRequestTimedOut:              true,
	sarama.ErrNotEnoughReplicas:            true,
	sarama.ErrNotEnoughReplicasAfterAppend: true,
	sarama.ErrKafkaStorageError:            true,
	sarama.ErrNetworkException:             true,
}

// outcome is what became of one batch of a request.
type outcome struct {
	base  int64 // the offset of its first record; -1 when the broker did not say
	err   error // nil: acknowledged
	retry bool
	split bool // refused as too large: its halves are sent instead
	// unwritten: the broker refused it before writing anything, so its sequence is free
	// for the partition's next batch.
	unwritten bool
}

// send produces batches as one request and settles each with the broker's answer.
func (s *brokerSender) send(batches []*batch) {
	p := s.p
	batches = p.addToTxn(batches)
	if len(batches) == 0 {
		return
	}
	req := &sarama.ProduceRequest{
		RequiredAcks: p.cfg.Producer.RequiredAcks,
		Timeout:      int32(p.cfg.Producer.Timeout / time.Millisecond),
		Version:      p.produceVersion,
	}
	if p.txnID != "" {
		req.TransactionalID = &p.txnID
	}
	for _, b := range batches {
		req.AddBatch(b.ps.topic, b.ps.id, p.recordBatch(b))
	}
	p.mu.Lock()
	broker := s.broker
	p.mu.Unlock()
	resp, err := broker.Produce(req)
	if err != nil {
		// The connection is in doubt: drop it, a retry opens a new one.
		_ = broker.Close()
	}
	outcomes := make([]outcome, len(batches))
	for i, b := range batches {
		outcomes[i] = s.outcome(b, resp, err)
	}
	for i, b := range batches {
		switch o := outcomes[i]; {
		case o.retry || o.split:
		case o.err != nil:
			if o.unwritten {
				p.mu.Lock()
				p.unsequenceLocked(b)
				p.mu.Unlock()
			}
			p.failBatch(b, o.err)
		default:
			p.ackBatch(&s.done, b, o.base)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, b := range batches {
		ps := b.ps
		if outcomes[i].split {
			p.splitLocked(b)
			ps.busy, ps.inFlight = false, false
			p.scheduleLocked(ps, false)
			continue
		}
		if outcomes[i].retry {
			// The batch stays first in its partition's queue; the partition stays busy
			// until a reroute has found its leader again.
			ps.sender, ps.inFlight = nil, false
			p.startReroute(ps, true)
			continue
		}
		p.dequeueLocked(b)
		ps.busy, ps.inFlight = false, false
		p.scheduleLocked(ps, false)
	}
}

// outcome classifies the broker's answer for b: err is the request's own error.
func (s *brokerSender) outcome(b *batch, resp *sarama.ProduceResponse, err error) outcome {
	p := s.p
	if err == nil && resp == nil { // acks=0: the broker answers nothing
		return outcome{base: -1}
	}
	if err == nil {
		block := resp.GetBlock(b.ps.topic, b.ps.id)
		switch {
		case block == nil:
			err = sarama.ErrIncompleteResponse
		case block.Err == sarama.ErrNoError:
			return outcome{base: block.Offset}
		case block.Err == sarama.ErrMessageSizeTooLarge && len(b.msgs) > 1:
			// The batch is over the topic's max.message.bytes, not necessarily any of its
			// records: as Java's producer, send it again in halves.
			return outcome{split: true}
		case block.Err == sarama.ErrMessageSizeTooLarge:
			return outcome{err: block.Err, unwritten: true}
		case block.Err == sarama.ErrDuplicateSequenceNumber:
			// The broker wrote the batch on an earlier try whose answer was lost.
			return outcome{base: -1}
		case !retriableProduceErrors[block.Err]:
			return outcome{err: block.Err}
		default:
			err = block.Err
		}
	}
	if b.retries >= p.cfg.Producer.Retry.Max {
		return outcome{err: err}
	}
	b.lastErr = err
	if p.expired(b, time.Now()) {
		return outcome{err: p.timeoutError(b)}
	}
	b.retries++
	return outcome{retry: true}
}

// startReroute has a goroutine find the leader of ps (after the retry backoff when
// backoff) and hand the partition to its sender; ps is busy until then. p.mu is held.
func (p *Producer) startReroute(ps *partition, backoff bool) {
	ps.busy = true
	p.wg.Add(1)
	go p.reroute(ps, backoff)
}

func (p *Producer) reroute(ps *partition, backoff bool) {
	defer p.wg.Done()
	for {
		if backoff {
			time.Sleep(p.cfg.Producer.Retry.Backoff)
			_ = p.client.RefreshMetadata(ps.topic)
		}
		backoff = true
		leader, err := p.client.Leader(ps.topic, ps.id)
		if err == nil {
			// A broker the producer dropped after a network error connects again.
			if oerr := leader.Open(p.cfg); oerr != nil && !errors.Is(oerr, sarama.ErrAlreadyConnected) {
				err = oerr
			}
		}
		p.mu.Lock()
		if err == nil {
			ps.sender = p.senderLocked(leader)
			ps.busy = false
			p.scheduleLocked(ps, false)
			p.mu.Unlock()
			return
		}
		// Without a leader every waiting batch uses up a try; those out of tries or out of
		// time fail.
		if ps.open != nil {
			ps.queue = append(ps.queue, ps.open)
			ps.open = nil
		}
		cause := fmt.Errorf("no leader for %s/%d: %w", ps.topic, ps.id, err)
		now := time.Now()
		var failed []*batch
		var errs []error
		keep := ps.queue[:0]
		for _, b := range ps.queue {
			b.lastErr = cause
			switch {
			case b.retries >= p.cfg.Producer.Retry.Max:
				failed, errs = append(failed, b), append(errs, cause)
			case p.expired(b, now):
				failed, errs = append(failed, b), append(errs, p.timeoutError(b))
			default:
				b.retries++
				keep = append(keep, b)
			}
		}
		clear(ps.queue[len(keep):])
		ps.queue = keep
		empty := len(keep) == 0
		if empty {
			ps.busy = false // the next record starts a new reroute
		}
		p.mu.Unlock()
		p.failBatches(failed, errs)
		if empty {
			return
		}
	}
}
