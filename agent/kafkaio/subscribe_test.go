package kafkaio

import (
	"github.com/stoatflow/stoatflow/pipeline"
	"slices"
	"testing"
	"time"
)

// A topic created after the start is listed by ClusterTopics (the broker's own are not),
// and Subscribe rejoins the group with it, so its records arrive.
func TestSubscribeToATopicCreatedLater(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "sub-a", 1)
	produceN(t, e, "sub-a", 0, 0, 2)
	r := &recorder{}
	c := newTestConsumer(t, e, "sub-group", []string{"sub-a"}, testConfig(), r)
	c.Start(t.Context())
	receive(t, c, 2)
	if err := c.Commit(map[pipeline.TopicPartition]int64{{Topic: "sub-a", Partition: 0}: 2}); err != nil {
		t.Fatal(err)
	}

	createTopic(t, e, "sub-b", 1)
	produceN(t, e, "sub-b", 0, 0, 3)
	topics, err := c.ClusterTopics()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(topics, "sub-b") || slices.Contains(topics, "__consumer_offsets") {
		t.Fatalf("ClusterTopics = %v, want sub-b and none of the broker's own", topics)
	}
	before := r.generation.Load()
	c.Subscribe([]string{"sub-a", "sub-b"})
	got := receive(t, c, 3)
	for _, m := range got {
		if m.Topic != "sub-b" {
			t.Fatalf("after Subscribe: %s-%d@%d, want only sub-b's records (sub-a's were read)", m.Topic, m.Partition, m.Offset)
		}
	}
	eventually(t, 10*time.Second, "a new generation", func() bool { return r.generation.Load() > before })
	assigned, revoked := r.calls()
	if len(revoked) == 0 || !slices.Equal(assigned[len(assigned)-1], []pipeline.TopicPartition{{Topic: "sub-a", Partition: 0}, {Topic: "sub-b", Partition: 0}}) {
		t.Fatalf("assigned %v, revoked %v: want the old generation revoked and both topics assigned", assigned, revoked)
	}
}
