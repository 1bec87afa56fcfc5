package kafkaio

import (
	"fmt"
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

func TestEnsureTopicsCreatesMissingAndLeavesExisting(t *testing.T) {
	e := startBroker(t)
	compact := "compact"
	specs := map[string]TopicSpec{
		"in":        {Partitions: 4, ReplicationFactor: 1},
		"changelog": {Partitions: 2, ReplicationFactor: -1, Configs: map[string]*string{"cleanup.policy": &compact}},
		"defaulted": {Partitions: -1, ReplicationFactor: -1},
	}
	if err := EnsureTopics(e.Addrs(), testConfig(), specs); err != nil {
		t.Fatalf("EnsureTopics: %v", err)
	}
	want := map[string]int32{"in": 4, "changelog": 2, "defaulted": 1}
	got, err := PartitionCounts(e.Addrs(), testConfig(), []string{"in", "changelog", "defaulted"})
	if err != nil {
		t.Fatalf("PartitionCounts: %v", err)
	}
	for topic, n := range want {
		if got[topic] != n {
			t.Errorf("PartitionCounts[%s] = %d, want %d", topic, got[topic], n)
		}
	}
	if p := e.cluster.TopicInfo("changelog").Configs["cleanup.policy"]; p == nil || *p != "compact" {
		t.Errorf("changelog cleanup.policy = %v, want compact", p)
	}

	// Again, with other counts and a new topic: existing topics are left alone.
	specs["in"] = TopicSpec{Partitions: 8, ReplicationFactor: 1}
	specs["out"] = TopicSpec{Partitions: 3, ReplicationFactor: 1}
	if err := EnsureTopics(e.Addrs(), testConfig(), specs); err != nil {
		t.Fatalf("EnsureTopics again: %v", err)
	}
	got, err = PartitionCounts(e.Addrs(), testConfig(), []string{"in", "out"})
	if err != nil {
		t.Fatalf("PartitionCounts: %v", err)
	}
	if got["in"] != 4 || got["out"] != 3 {
		t.Errorf("PartitionCounts = %v, want in:4 (unchanged) out:3", got)
	}

	// As internal topics, the same are refused with Kafka Streams' error.
	err = EnsureInternalTopics(e.Addrs(), testConfig(), specs)
	if want := "Existing internal topic in has invalid partitions: expected: 8; actual: 4."; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("EnsureInternalTopics = %v, want %q", err, want)
	}
	delete(specs, "in")
	if err := EnsureInternalTopics(e.Addrs(), testConfig(), specs); err != nil {
		t.Fatalf("EnsureInternalTopics of topics as they are: %v", err)
	}
}

// The topics EnsureTopics created are usable when it returns: a client asking any broker
// for their metadata at once, with no retry, finds every partition, and its leader answers
// for it. Apache Kafka creates a topic in its controller and tells the brokers after it
// answers, and a leader takes its partition on after that; kfake does it all at once.
func TestEnsureTopicsReturnsOnceTheTopicsAreUsable(t *testing.T) {
	ensureTopicsReturnsOnceTheTopicsAreUsable(t, startBroker(t))
}

func ensureTopicsReturnsOnceTheTopicsAreUsable(t *testing.T, e testCluster) {
	cfg := testConfig()
	cfg.Metadata.Retry.Max = 0
	for round := range 5 {
		specs := map[string]TopicSpec{}
		for i := range 4 {
			specs[kafkatest.Name(t, fmt.Sprintf("t%d-%d", round, i))] = TopicSpec{Partitions: 3, ReplicationFactor: -1}
		}
		if err := EnsureTopics(e.Addrs(), testConfig(), specs); err != nil {
			t.Fatal(err)
		}
		for _, addr := range e.Addrs() {
			client, err := sarama.NewClient([]string{addr}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for topic := range specs {
				parts, err := client.Partitions(topic)
				if err != nil || len(parts) != 3 {
					client.Close()
					t.Fatalf("%s right after EnsureTopics, asking %s: partitions %v, %v", topic, addr, parts, err)
				}
				for _, p := range parts {
					if _, err := client.GetOffset(topic, p, sarama.OffsetNewest); err != nil {
						client.Close()
						t.Fatalf("%s-%d right after EnsureTopics, its leader asked through %s: %v", topic, p, addr, err)
					}
				}
			}
			client.Close()
		}
	}
}

func TestEnsureTopicsErrors(t *testing.T) {
	ensureTopicsErrors(t, startBroker(t))
}

func ensureTopicsErrors(t *testing.T, e testCluster) {
	a := kafkatest.Name(t, "a")
	cases := map[string]map[string]TopicSpec{
		"partitions 0":          {a: {Partitions: 0, ReplicationFactor: 1}},
		"replication factor -2": {a: {Partitions: 1, ReplicationFactor: -2}},
		"empty name":            {"": {Partitions: 1, ReplicationFactor: 1}},
		// One broker cannot hold three replicas.
		"replication factor 3": {a: {Partitions: 1, ReplicationFactor: 3}},
	}
	for name, specs := range cases {
		if err := EnsureTopics(e.Addrs(), testConfig(), specs); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func TestPartitionCountsMissingTopic(t *testing.T) {
	partitionCountsMissingTopic(t, startBroker(t))
}

func partitionCountsMissingTopic(t *testing.T, e testCluster) {
	here, gone := kafkatest.Name(t, "here"), kafkatest.Name(t, "gone")
	createTopic(t, e, here, 2)
	_, err := PartitionCounts(e.Addrs(), testConfig(), []string{here, gone})
	if err == nil || !strings.Contains(err.Error(), `gone`) {
		t.Fatalf("PartitionCounts with a missing topic: err = %v, want one naming \"gone\"", err)
	}
}
