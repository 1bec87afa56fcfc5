package kafkaio

import (
	"reflect"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// channelHandler hands Assigned and Revoking to the goroutine that reads Messages, as the
// agent's loop does: the callbacks block until that goroutine has served them.
type channelHandler struct {
	assigned chan []pipeline.TopicPartition
	revoking chan []pipeline.TopicPartition
	served   chan struct{}
	stop     chan struct{}
}

// newChannelHandler returns a handler whose callbacks give up once stop is closed: the
// test closes it before the consumer's Close, whose Revoking nobody serves.
func newChannelHandler() *channelHandler {
	return &channelHandler{
		assigned: make(chan []pipeline.TopicPartition),
		revoking: make(chan []pipeline.TopicPartition),
		served:   make(chan struct{}),
		stop:     make(chan struct{}),
	}
}

func (h *channelHandler) Assigned(tps []pipeline.TopicPartition) {
	select {
	case h.assigned <- tps:
	case <-h.stop:
	}
}

func (h *channelHandler) Revoking(tps []pipeline.TopicPartition) {
	select {
	case h.revoking <- tps:
		<-h.served
	case <-h.stop:
	}
}

func TestRewindResumesFromCommittedOffsets(t *testing.T) {
	rewindResumesFromCommittedOffsets(t, func(t *testing.T) testCluster { return startBroker(t) })
}

// rewindResumesFromCommittedOffsets runs its cases on the broker of each subtest.
func rewindResumesFromCommittedOffsets(t *testing.T, broker func(t *testing.T) testCluster) {
	for _, instance := range []string{"node-1", ""} {
		name := "static"
		if instance == "" {
			name = "dynamic"
		}
		t.Run(name, func(t *testing.T) {
			e := broker(t)
			rewind := kafkatest.Name(t, "rewind")
			createTopic(t, e, rewind, 1)
			produceN(t, e, rewind, 0, 0, 10)
			tp := pipeline.TopicPartition{Topic: rewind, Partition: 0}
			cfg := testConfig()
			cfg.Consumer.Group.InstanceId = instance
			h := newChannelHandler()
			defer close(h.stop) // runs before the Close registered by newTestConsumer
			c := newTestConsumer(t, e, kafkatest.Name(t, "rewind-group"), []string{rewind}, cfg, h)
			c.Start(t.Context())

			// This goroutine plays the agent's loop: it reads messages and serves the
			// callbacks, and it is the one that calls Rewind.
			var events []string
			var got []pipeline.SourceRecord
			next := func() []pipeline.SourceRecord {
				t.Helper()
				timeout := time.After(30 * time.Second)
				for {
					select {
					case tps := <-h.assigned:
						events = append(events, "assigned")
						if !reflect.DeepEqual(tps, []pipeline.TopicPartition{tp}) {
							t.Fatalf("Assigned(%v), want %v", tps, tp)
						}
					case <-h.revoking:
						events = append(events, "revoking")
						h.served <- struct{}{}
					case batch := <-c.Messages():
						return batch
					case <-timeout:
						t.Fatalf("no message before the deadline; callbacks so far: %v", events)
					}
				}
			}
			for len(got) < 10 {
				got = append(got, next()...)
			}
			if err := c.Commit(map[pipeline.TopicPartition]int64{tp: 5}); err != nil {
				t.Fatalf("Commit: %v", err)
			}
			events = nil
			if err := c.Rewind(); err != nil {
				t.Fatalf("Rewind: %v", err)
			}
			batch := next()
			if batch[0].Offset != 5 {
				t.Fatalf("first message after Rewind at offset %d, want 5 (the committed offset)", batch[0].Offset)
			}
			if want := []string{"revoking", "assigned"}; !reflect.DeepEqual(events, want) {
				t.Fatalf("callbacks between Rewind and the next message: %v, want %v", events, want)
			}
		})
	}
}

// An epoch can fail after one generation ended and before the next one's Assigned was
// served: the goroutine that calls Rewind is the one Assigned waits for, so Rewind must not
// wait for that generation to end. Nothing of it was delivered, and it starts at the
// committed offsets.
func TestRewindBeforeTheNextGenerationIsAssigned(t *testing.T) {
	e := startBroker(t)
	topic := kafkatest.Name(t, "rewind-unassigned")
	createTopic(t, e, topic, 1)
	produceN(t, e, topic, 0, 0, 10)
	tp := pipeline.TopicPartition{Topic: topic, Partition: 0}
	h := newChannelHandler()
	defer close(h.stop) // runs before the Close registered by newTestConsumer
	c := newTestConsumer(t, e, kafkatest.Name(t, "rewind-unassigned-group"), []string{topic}, testConfig(), h)
	c.Start(t.Context())
	var got []pipeline.SourceRecord
	timeout := time.After(30 * time.Second)
	for len(got) < 10 {
		select {
		case <-h.assigned:
		case batch := <-c.Messages():
			got = append(got, batch...)
		case <-timeout:
			t.Fatalf("%d of 10 messages before the deadline", len(got))
		}
	}
	if err := c.Commit(map[pipeline.TopicPartition]int64{tp: 5}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	first := c.gen
	c.mu.Unlock()
	if err := c.Rewind(); err != nil {
		t.Fatal(err)
	}
	<-h.revoking
	h.served <- struct{}{}
	// The next generation's Setup is waiting in Assigned, which nobody serves yet.
	eventually(t, 30*time.Second, "the next generation's Setup", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.gen != nil && c.gen != first
	})
	rewound := make(chan error, 1)
	go func() { rewound <- c.Rewind() }()
	select {
	case err := <-rewound:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Rewind waits for a generation whose Assigned only its caller can serve")
	}
	select {
	case <-h.assigned:
	case <-time.After(30 * time.Second):
		t.Fatal("no Assigned of the next generation")
	}
	batch := nextBatch(t, c)
	if batch[0].Offset != 5 {
		t.Fatalf("first message after Rewind at offset %d, want 5 (the committed offset)", batch[0].Offset)
	}
}

func TestRewindWithoutGeneration(t *testing.T) {
	rewindWithoutGeneration(t, startBroker(t))
}

func rewindWithoutGeneration(t *testing.T, e testCluster) {
	idle, idleGroup := kafkatest.Name(t, "idle"), kafkatest.Name(t, "idle-group")
	createTopic(t, e, idle, 1)
	c := newTestConsumer(t, e, idleGroup, []string{idle}, testConfig(), &recorder{})
	// Not started: nothing fetched, nothing to drop.
	if err := c.Rewind(); err != nil {
		t.Fatalf("Rewind before Start: %v", err)
	}
	if err := c.Close(true); err != nil {
		t.Fatal(err)
	}
	if err := c.Rewind(); err == nil {
		t.Fatal("Rewind after Close: want an error")
	}
}

// Buffered batches of the ended generation never reach the reader after Rewind.
func TestRewindDropsBufferedBatches(t *testing.T) {
	rewindDropsBufferedBatches(t, startBroker(t))
}

func rewindDropsBufferedBatches(t *testing.T, e testCluster) {
	backlog := kafkatest.Name(t, "rewind-backlog")
	createTopic(t, e, backlog, 1)
	produceN(t, e, backlog, 0, 0, 3000)
	tp := pipeline.TopicPartition{Topic: backlog, Partition: 0}
	cfg := testConfig()
	cfg.Consumer.Group.InstanceId = "node-1"
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	r := &recorder{}
	// Batches of at most 100: 3,000 records fill the Messages channel however they are
	// fetched (in one fetch, batches take max.poll.records each and three of 1,000 would
	// never fill it).
	c := newTestConsumerPolling(t, e, kafkatest.Name(t, "rewind-backlog-group"), []string{backlog}, cfg, 100, r)
	c.Start(t.Context())
	first := nextBatch(t, c)
	if first[0].Offset != 0 {
		t.Fatalf("first batch at offset %d, want 0", first[0].Offset)
	}
	eventually(t, 30*time.Second, "a full Messages channel", func() bool {
		return len(c.Messages()) == cap(c.Messages())
	})
	if err := c.Commit(map[pipeline.TopicPartition]int64{tp: 7}); err != nil {
		t.Fatal(err)
	}
	if err := c.Rewind(); err != nil {
		t.Fatal(err)
	}
	batch := nextBatch(t, c)
	if batch[0].Offset != 7 {
		t.Fatalf("first batch after Rewind at offset %d, want 7: a buffered batch of the old generation leaked", batch[0].Offset)
	}
	if _, revoked := r.calls(); len(revoked) != 1 {
		t.Fatalf("Revoking called %d times, want once", len(revoked))
	}
}

func nextBatch(t *testing.T, c *Consumer) []pipeline.SourceRecord {
	t.Helper()
	select {
	case batch := <-c.Messages():
		return batch
	case <-time.After(30 * time.Second):
		t.Fatal("no batch before the deadline")
		return nil
	}
}
