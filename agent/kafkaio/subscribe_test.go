package kafkaio

import (
	"slices"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// A topic created after the start is listed by ClusterTopics (the broker's own are not),
// and Subscribe rejoins the group with it, so its records arrive.
func TestSubscribeToATopicCreatedLater(t *testing.T) {
	subscribeToATopicCreatedLater(t, startBroker(t))
}

func subscribeToATopicCreatedLater(t *testing.T, e testCluster) {
	subA, subB := kafkatest.Name(t, "sub-a"), kafkatest.Name(t, "sub-b")
	createTopic(t, e, subA, 1)
	produceN(t, e, subA, 0, 0, 2)
	r := &recorder{}
	c := newTestConsumer(t, e, kafkatest.Name(t, "sub-group"), []string{subA}, testConfig(), r)
	c.Start(t.Context())
	receive(t, c, 2)
	if err := c.Commit(map[pipeline.TopicPartition]int64{{Topic: subA, Partition: 0}: 2}); err != nil {
		t.Fatal(err)
	}

	createTopic(t, e, subB, 1)
	produceN(t, e, subB, 0, 0, 3)
	topics, err := c.ClusterTopics()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(topics, subB) || slices.Contains(topics, "__consumer_offsets") || slices.Contains(topics, "__transaction_state") {
		t.Fatalf("ClusterTopics = %v, want %s and none of the broker's own", topics, subB)
	}
	before := r.generation.Load()
	c.Subscribe([]string{subA, subB})
	got := receive(t, c, 3)
	for _, m := range got {
		if m.Topic != subB {
			t.Fatalf("after Subscribe: %s-%d@%d, want only sub-b's records (sub-a's were read)", m.Topic, m.Partition, m.Offset)
		}
	}
	eventually(t, 10*time.Second, "a new generation", func() bool { return r.generation.Load() > before })
	assigned, revoked := r.calls()
	if len(revoked) == 0 || !slices.Equal(assigned[len(assigned)-1], []pipeline.TopicPartition{{Topic: subA, Partition: 0}, {Topic: subB, Partition: 0}}) {
		t.Fatalf("assigned %v, revoked %v: want the old generation revoked and both topics assigned", assigned, revoked)
	}
}
