package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
)

// runPipe is the ceiling: a consumer group member that copies every input record to the
// output topic's same partition, with no processing. Its sarama clients are built from the
// agent's config by the agent's own code, so partitions, batching and acks are the agent's.
func runPipe(ctx context.Context, cfg *config.Config, running chan<- struct{}) error {
	ccfg, err := kafkaio.SaramaConfig(cfg, kafkaio.RoleConsumer)
	if err != nil {
		return err
	}
	pcfg, err := kafkaio.SaramaConfig(cfg, kafkaio.RoleProducer)
	if err != nil {
		return err
	}
	pcfg.Producer.Partitioner = sarama.NewManualPartitioner
	producer, err := sarama.NewAsyncProducer(cfg.BootstrapServers, pcfg)
	if err != nil {
		return fmt.Errorf("pipe producer: %w", err)
	}
	h := &pipeHandler{producer: producer, running: running}
	var drained sync.WaitGroup
	drained.Add(2)
	go func() {
		defer drained.Done()
		for range producer.Successes() {
		}
	}()
	go func() {
		defer drained.Done()
		for e := range producer.Errors() {
			h.failed.CompareAndSwap(nil, e)
		}
	}()
	defer func() {
		producer.AsyncClose()
		drained.Wait()
	}()

	group, err := sarama.NewConsumerGroup(cfg.BootstrapServers, cfg.ApplicationID, ccfg)
	if err != nil {
		return fmt.Errorf("pipe consumer: %w", err)
	}
	defer group.Close()
	for ctx.Err() == nil {
		if err := group.Consume(ctx, []string{inputTopic}, h); err != nil {
			return fmt.Errorf("pipe consumer: %w", err)
		}
		if e := h.failed.Load(); e != nil {
			return fmt.Errorf("pipe producer: %w", e)
		}
	}
	return nil
}

type pipeHandler struct {
	producer sarama.AsyncProducer
	failed   atomic.Pointer[sarama.ProducerError]
	running  chan<- struct{}
	once     sync.Once
}

func (h *pipeHandler) Setup(sarama.ConsumerGroupSession) error {
	h.once.Do(func() { close(h.running) })
	return nil
}

// Cleanup commits what was copied; the agent's at-least-once default commits every 30 s, so
// neither commits during a run.
func (h *pipeHandler) Cleanup(s sarama.ConsumerGroupSession) error {
	s.Commit()
	return nil
}

func (h *pipeHandler) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		if h.failed.Load() != nil {
			return nil
		}
		h.producer.Input() <- &sarama.ProducerMessage{
			Topic: outputTopic, Partition: msg.Partition,
			Key: sarama.ByteEncoder(msg.Key), Value: sarama.ByteEncoder(msg.Value),
			Timestamp: msg.Timestamp,
		}
		s.MarkMessage(msg, "")
	}
	return nil
}
