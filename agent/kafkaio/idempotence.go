package kafkaio

import (
	"fmt"

	"github.com/IBM/sarama"
)

// Idempotence: a producer id and epoch from InitProducerId, and per partition the
// sequence of the next batch. A batch gets its sequence when it is first taken into a
// request and keeps it through its retries, so the broker drops a batch it already wrote
// (DUPLICATE_SEQUENCE_NUMBER) and refuses one that skips ahead. A batch that failed for
// good leaves a gap the broker would refuse every later batch for: the producer then takes
// a new producer id (or, transactional, a new epoch) before it sends again.

// sequenceLocked gives b its producer id, epoch and first sequence on its first send.
// p.mu is held.
func (p *Producer) sequenceLocked(b *batch) {
	if !p.cfg.Producer.Idempotent || b.sequenced {
		return
	}
	b.sequenced = true
	b.rb.ProducerID, b.rb.ProducerEpoch = p.producerID, p.producerEpoch
	b.rb.FirstSequence = b.ps.nextSeq
	b.ps.nextSeq += int32(len(b.msgs)) // wraps around at 2^31, as the protocol says
}

// unsequenceLocked gives the sequence of b, the partition's batch in flight, back to the
// partition, when the broker refused b before writing any of it: the next batch takes it
// and nothing else needs a new producer id. p.mu is held.
func (p *Producer) unsequenceLocked(b *batch) {
	if b.sequenced {
		b.ps.nextSeq = b.rb.FirstSequence
		b.sequenced = false
	}
}

// initProducerID asks for a producer id and epoch: from the transaction coordinator for a
// transactional producer (which fences the earlier producers of its transactional id and
// aborts their open transaction), from any broker for an idempotent one. It asks as a new
// producer (no id, no epoch): a producer that was fenced may not resume its old epoch.
func (p *Producer) initProducerID() (int64, int16, error) {
	req := &sarama.InitProducerIDRequest{ProducerID: -1, ProducerEpoch: -1, Version: initProducerIDVersion(p.cfg.Version)}
	coordinator, refresh := p.anyBroker, func() error { return p.client.RefreshMetadata() }
	if p.txnID != "" {
		req.TransactionalID = &p.txnID
		req.TransactionTimeout = p.cfg.Producer.Transaction.Timeout
		coordinator, refresh = p.txnCoordinator, p.refreshTxnCoordinator
	}
	var resp *sarama.InitProducerIDResponse
	err := p.retryTxn(coordinator, refresh, func(b *sarama.Broker) (sarama.KError, error) {
		var err error
		if resp, err = b.InitProducerID(req); err != nil {
			return 0, err
		}
		return resp.Err, nil
	})
	if err != nil {
		return -1, -1, fmt.Errorf("init producer id: %w", err)
	}
	return resp.ProducerID, resp.ProducerEpoch, nil
}

func (p *Producer) anyBroker() (*sarama.Broker, error) {
	if b := p.client.LeastLoadedBroker(); b != nil {
		return b, nil
	}
	return nil, sarama.ErrOutOfBrokers
}

// reinit takes a new producer id and epoch and starts every partition's sequence afresh.
// Nothing is taken into a request meanwhile; the callers call it when nothing is in
// flight.
func (p *Producer) reinit() error {
	p.mu.Lock()
	p.initializing = true
	p.mu.Unlock()
	id, epoch, err := p.initProducerID()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.initializing = false
	if err == nil {
		p.producerID, p.producerEpoch, p.seqBroken = id, epoch, false
		for _, ps := range p.all {
			ps.nextSeq = 0
		}
	}
	for _, s := range p.senders {
		s.signal()
	}
	return err
}

// initProducerIDVersion, produceVersion and txnVersion are the request versions sarama
// uses for the configured Kafka version.
func initProducerIDVersion(v sarama.KafkaVersion) int16 {
	switch {
	case v.IsAtLeast(sarama.V2_7_0_0):
		return 4
	case v.IsAtLeast(sarama.V2_5_0_0):
		return 3
	case v.IsAtLeast(sarama.V2_4_0_0):
		return 2
	case v.IsAtLeast(sarama.V2_0_0_0):
		return 1
	}
	return 0
}

func produceVersion(v sarama.KafkaVersion) int16 {
	switch {
	case v.IsAtLeast(sarama.V3_7_0_0):
		return 10
	case v.IsAtLeast(sarama.V2_8_0_0):
		return 9
	case v.IsAtLeast(sarama.V2_4_0_0):
		return 8
	case v.IsAtLeast(sarama.V2_1_0_0):
		return 7
	case v.IsAtLeast(sarama.V2_0_0_0):
		return 6
	case v.IsAtLeast(sarama.V1_0_0_0):
		return 5
	}
	return 3
}

// txnVersion is the version of AddPartitionsToTxn, AddOffsetsToTxn and EndTxn.
func txnVersion(v sarama.KafkaVersion) int16 {
	switch {
	case v.IsAtLeast(sarama.V2_8_0_0):
		return 3
	case v.IsAtLeast(sarama.V2_7_0_0):
		return 2
	case v.IsAtLeast(sarama.V2_0_0_0):
		return 1
	}
	return 0
}

func txnOffsetCommitVersion(v sarama.KafkaVersion) int16 {
	switch {
	case v.IsAtLeast(sarama.V2_5_0_0):
		return 3
	case v.IsAtLeast(sarama.V2_1_0_0):
		return 2
	case v.IsAtLeast(sarama.V2_0_0_0):
		return 1
	}
	return 0
}
