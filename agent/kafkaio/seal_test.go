package kafkaio

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/agent/internal/kfaketest"
	"github.com/stoatflow/stoatflow/pipeline"
)

// A sealed epoch waits for its own records only: an epoch whose record is held does not
// hold up a later one, and Wait returns once the held record is acknowledged; WaitTracked
// waits for the records to tracked topics only. The two
// topics have different leaders: a broker answers the requests of a connection in order.
func TestSealedEpochWaitsForItsOwnRecords(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(1, "held", "free"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.MoveTopicPartition("free", 0, 1-c.LeaderFor("held", 0)); err != nil {
		t.Fatal(err)
	}
	release, held := kfaketest.HoldProduce(c, "held")
	p, err := NewProducer(c.ListenAddrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.TrackOffsets(func(topic string) bool { return topic == "free" })
	if err := p.Send("held", 0, []byte("k"), []byte("v"), nil, -1, nil); err != nil {
		t.Fatal(err)
	}
	first := p.Seal()
	<-held
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := first.WaitTracked(ctx); err != nil {
		t.Fatalf("WaitTracked of an epoch without tracked records: %v", err)
	}
	if err := p.Send("free", 0, []byte("k"), []byte("v"), nil, -1, nil); err != nil {
		t.Fatal(err)
	}
	second := p.Seal()
	if err := second.WaitTracked(ctx); err != nil {
		t.Fatalf("WaitTracked of the epoch after the held one: %v", err)
	}
	if got := p.AckedOffsets()[pipeline.TopicPartition{Topic: "free"}]; got != 0 {
		t.Fatalf("acked offset of free-0 %d after WaitTracked, want 0", got)
	}
	if err := second.Wait(ctx); err != nil {
		t.Fatalf("the epoch after the held one: %v", err)
	}
	select {
	case <-first.Done():
		t.Fatal("the epoch whose record is held is done")
	default:
	}
	release()
	if err := first.Wait(ctx); err != nil {
		t.Fatalf("the held epoch after the release: %v", err)
	}
	if empty := p.Seal(); empty.Wait(ctx) != nil {
		t.Fatal("an epoch without records is not done at once")
	}
}

// Wait reports the failure of a record of its epoch, and leaves it for Flush too.
func TestSealedEpochReportsAFailedRecord(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "refused"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "refused", Err: kerr.TopicAuthorizationFailed, Count: -1})
	p, err := NewProducer(c.ListenAddrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Send("refused", 0, []byte("k"), []byte("v"), nil, -1, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var pe *ProduceError
	if err := p.Seal().Wait(ctx); !errors.As(err, &pe) || !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Fatalf("Wait = %v, want the refusal", err)
	}
	if err := p.Flush(ctx); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		t.Fatalf("Flush = %v, want the refusal too", err)
	}
}
