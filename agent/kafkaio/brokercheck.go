package kafkaio

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// BrokerCheck is the outcome of asking one broker for cluster metadata.
type BrokerCheck struct {
	Addr string
	Err  error // nil when the broker answered
	Took time.Duration
}

// CheckBrokers asks each broker, at once, for cluster metadata on a connection of its own
// and waits for every answer: a broker that accepts connections and never answers fails
// after cfg's Net.ReadTimeout (request.timeout.ms), where a sarama client would retry in
// silence. ctx ends the wait early.
func CheckBrokers(ctx context.Context, brokers []string, cfg *sarama.Config) []BrokerCheck {
	out := make([]BrokerCheck, len(brokers))
	var wg sync.WaitGroup
	for i, addr := range brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			out[i] = BrokerCheck{Addr: addr, Err: askMetadata(ctx, addr, cfg)}
			out[i].Took = time.Since(start)
		}()
	}
	wg.Wait()
	return out
}

func askMetadata(ctx context.Context, addr string, cfg *sarama.Config) error {
	b := sarama.NewBroker(addr)
	if err := b.Open(cfg); err != nil {
		return err
	}
	defer func() { _ = b.Close() }()
	done := make(chan error, 1)
	go func() {
		_, err := b.GetMetadata(sarama.NewMetadataRequest(cfg.Version, nil))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("no answer to a metadata request: %w", err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
