package kafkaio

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// testCluster is the broker a test body runs against: an *Embedded (kfake, startBroker) or,
// in the body's twin in a *_kafka_test.go file, Apache Kafka 4.4 (onKafka). A body that
// runs on both names its topics, groups and transactional ids with kafkatest.Name: a
// shared Apache Kafka cluster has other tests' too.
type testCluster interface {
	Addrs() []string
}

// startBroker starts an embedded broker that the test closes at its end.
func startBroker(t *testing.T) *Embedded {
	t.Helper()
	e, err := StartEmbedded("127.0.0.1:0", nil)
	if err != nil {
		t.Fatalf("StartEmbedded: %v", err)
	}
	t.Cleanup(e.Close)
	return e
}

// testConfig is a sarama config with the short timeouts a test against a local broker
// can afford.
func testConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_6_0_0
	cfg.ClientID = "kafkaio-test"
	cfg.Metadata.Retry.Backoff = 20 * time.Millisecond
	cfg.Producer.Retry.Backoff = 20 * time.Millisecond
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Group.Session.Timeout = 6 * time.Second // kfake's minimum
	cfg.Consumer.Group.Heartbeat.Interval = 100 * time.Millisecond
	cfg.Consumer.Group.Rebalance.Retry.Backoff = 50 * time.Millisecond
	return cfg
}

// createTopic creates topic on e with the given partition count.
func createTopic(t *testing.T, e testCluster, topic string, partitions int32) {
	t.Helper()
	if err := EnsureTopics(e.Addrs(), testConfig(), map[string]TopicSpec{
		topic: {Partitions: partitions, ReplicationFactor: -1},
	}); err != nil {
		t.Fatalf("EnsureTopics(%s): %v", topic, err)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// produceN sends n records key-i/value-i to partition p of topic and flushes them.
func produceN(t *testing.T, e testCluster, topic string, p int32, from, n int) {
	t.Helper()
	produceNWith(t, e, testConfig(), topic, p, from, n)
}

// produceNWith is produceN with a producer of cfg.
func produceNWith(t *testing.T, e testCluster, cfg *sarama.Config, topic string, p int32, from, n int) {
	t.Helper()
	prod, err := NewProducer(e.Addrs(), cfg)
	if err != nil {
		t.Fatalf("NewProducer: %v", err)
	}
	defer prod.Close()
	for i := from; i < from+n; i++ {
		if err := prod.Send(topic, p, fmt.Appendf(nil, "key-%d", i), fmt.Appendf(nil, "value-%d", i), nil, int64(i), nil); err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	if err := prod.Flush(t.Context()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// recorder is a RebalanceHandler that records the calls; onRevoking runs inside Revoking.
type recorder struct {
	mu         sync.Mutex
	assigned   [][]pipeline.TopicPartition
	revoked    [][]pipeline.TopicPartition
	onRevoking func(tps []pipeline.TopicPartition)
	generation atomic.Int32 // count of Assigned calls
}

func (r *recorder) Assigned(tps []pipeline.TopicPartition) {
	r.mu.Lock()
	r.assigned = append(r.assigned, tps)
	r.mu.Unlock()
	r.generation.Add(1)
}

func (r *recorder) Revoking(tps []pipeline.TopicPartition) {
	r.mu.Lock()
	r.revoked = append(r.revoked, tps)
	fn := r.onRevoking
	r.mu.Unlock()
	if fn != nil {
		fn(tps)
	}
}

func (r *recorder) calls() (assigned, revoked [][]pipeline.TopicPartition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]pipeline.TopicPartition(nil), r.assigned...), append([][]pipeline.TopicPartition(nil), r.revoked...)
}

// newTopicReader connects a topic reader that the test closes when it ends.
func newTopicReader(t *testing.T, brokers []string, cfg *sarama.Config) *TopicReader {
	t.Helper()
	tr, err := NewTopicReader(brokers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}
