package agent

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
)

// brokerUnderTest is the broker a Kafka-path test body runs against: kfake in process
// (onKfake, in every go test run), or Apache Kafka 4.4 (onKafka, in the body's twin in a
// *_kafka_test.go file, run by make test-kafka). A body names its topics by what they are
// ("in", "out"); the broker gives each its name there: the same on kfake, where the broker
// is the test's own, a name of the test's own (kafkatest.Name) on a shared Apache Kafka
// cluster. Scripts and configs of the body go through script and config, which put those
// names in.
type brokerUnderTest struct {
	// kind is "kfake" or "kafka".
	kind    string
	brokers []string
	// nodes is the number of brokers (kfake: 1).
	nodes  int
	topics map[string]string
	parts  map[string]int32
	// name gives a topic of the test its name on this broker.
	name func(t testing.TB, what string) string
	// create creates a topic with the given partitions and topic configs.
	create func(t testing.TB, topic string, partitions int32, configs map[string]string)
}

// brokerFor makes the broker of a test (or subtest) of a body that runs several, each on a
// broker of its own (onKfake) or a shared cluster (onKafkaCluster), with topics of
// partitions each.
type brokerFor func(t *testing.T, partitions int32, topics ...string) *brokerUnderTest

// onKfake is an in-process kfake broker of the test's own with topics of partitions each.
func onKfake(t *testing.T, partitions int32, topics ...string) *brokerUnderTest {
	t.Helper()
	b := &brokerUnderTest{
		kind: "kfake", brokers: testBroker(t, partitions), nodes: 1,
		name: func(_ testing.TB, what string) string { return what },
	}
	b.create = func(t testing.TB, topic string, partitions int32, configs map[string]string) {
		t.Helper()
		specs := map[string]kafkaio.TopicSpec{topic: {Partitions: partitions, ReplicationFactor: -1, Configs: stringPtrs(configs)}}
		if err := kafkaio.EnsureTopics(b.brokers, saramaTestConfig(), specs); err != nil {
			t.Fatal(err)
		}
	}
	b.newTopics(t, partitions, topics...)
	return b
}

func stringPtrs(m map[string]string) map[string]*string {
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = &v
	}
	return out
}

// kafka reports whether the broker is Apache Kafka.
func (b *brokerUnderTest) kafka() bool { return b.kind != "kfake" }

// newTopics creates the topics of the test (by what they are) with partitions each.
func (b *brokerUnderTest) newTopics(t testing.TB, partitions int32, topics ...string) {
	t.Helper()
	for _, what := range topics {
		b.newTopic(t, what, partitions, nil)
	}
}

// newTopic creates one topic of the test with topic configs and returns its name.
func (b *brokerUnderTest) newTopic(t testing.TB, what string, partitions int32, configs map[string]string) string {
	t.Helper()
	if b.topics == nil {
		b.topics, b.parts = map[string]string{}, map[string]int32{}
	}
	if _, dup := b.topics[what]; dup {
		t.Fatalf("topic %q made twice", what)
	}
	name := b.name(t, what)
	b.create(t, name, partitions, configs)
	b.topics[what], b.parts[what] = name, partitions
	return name
}

// topic is the name of the test's topic what on this broker.
func (b *brokerUnderTest) topic(t testing.TB, what string) string {
	t.Helper()
	name, ok := b.topics[what]
	if !ok {
		t.Fatalf("no topic %q (the test made %v)", what, slices.Sorted(maps.Keys(b.topics)))
	}
	return name
}

// script puts the topics' names into src: each string literal "what" of a topic the test
// made becomes its name on this broker (unchanged on kfake).
func (b *brokerUnderTest) script(src string) string {
	if !b.kafka() {
		return src
	}
	pairs := make([]string, 0, 2*len(b.topics))
	for what, name := range b.topics {
		pairs = append(pairs, fmt.Sprintf("%q", what), fmt.Sprintf("%q", name))
	}
	return strings.NewReplacer(pairs...).Replace(src)
}

// config is testConfig on this broker: script and extra with the topics' names put in.
func (b *brokerUnderTest) config(t testing.TB, script, extra string) *config.Config {
	t.Helper()
	return testConfig(t, b.brokers, b.script(script), b.script(extra))
}

// produceKeys is produceKeys to the test's topic "in".
func (b *brokerUnderTest) produceKeys(t *testing.T, n, keys, from int, value string) {
	t.Helper()
	produceKeysTo(t, b.brokers, b.topic(t, "in"), b.parts["in"], n, keys, from, value)
}

// checkExactCounts is checkExactCounts of the test's topic "out".
func (b *brokerUnderTest) checkExactCounts(t *testing.T, want map[string]int64) {
	t.Helper()
	checkExactCountsOf(t, b.brokers, b.topic(t, "out"), want)
}
