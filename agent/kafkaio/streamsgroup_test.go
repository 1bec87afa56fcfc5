package kafkaio

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/pipeline"
)

// testTopology declares one sub-topology reading topic.
func testTopology(t *testing.T, topic string) *StreamsTopology {
	t.Helper()
	topo, err := DeclareTopology([]pipeline.SubtopologyTopics{{ID: 0, SourceTopics: []string{topic}}}, TopologyOptions{ReplicationFactor: -1})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// The embedded broker (kfake) has no streams groups: a member fails at once with an error
// that names the broker and the mode that works, instead of retrying for ever.
func TestStreamsGroupOnABrokerWithoutStreamsGroups(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "in", 2)
	m, err := JoinStreamsGroup(StreamsMemberConfig{
		Brokers: e.Addrs(), Client: testConfig(), Group: "app", Topology: testTopology(t, "in"),
		RequestTimeout: 5 * time.Second, RetryBackoff: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the member did not give up on a broker without streams groups")
	}
	err = m.Err()
	if !errors.Is(err, ErrStreamsGroupsUnsupported) {
		t.Fatalf("got %v, want ErrStreamsGroupsUnsupported", err)
	}
	for _, want := range []string{e.Addrs()[0], `group.protocol = "classic" works`, "Apache Kafka 4.1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if err := m.Close(context.Background(), LeaveGroup); !errors.Is(err, ErrStreamsGroupsUnsupported) {
		t.Errorf("Close: %v, want the member's error", err)
	}
}

// The broker's task lists become sorted task ids and back, one list per sub-topology; a
// sub-topology id that is not a number is an error.
func TestTaskIDsRoundTrip(t *testing.T) {
	tasks := []TaskID{{0, 0}, {0, 3}, {2, 1}, {10, 0}}
	back, err := fromTaskIDs(toTaskIDs(tasks))
	if err != nil || !slices.Equal(back, tasks) {
		t.Fatalf("round trip: %v, %v", back, err)
	}
	l := kmsg.NewTaskIDs()
	l.SubtopologyID, l.Partitions = "0", []int32{3, 1, 1}
	got, err := fromTaskIDs([]kmsg.TaskIDs{l})
	if err != nil || !slices.Equal(got, []TaskID{{0, 1}, {0, 3}}) {
		t.Fatalf("unsorted, repeated partitions: %v, %v", got, err)
	}
	l.SubtopologyID = "named-topology"
	if _, err := fromTaskIDs([]kmsg.TaskIDs{l}); err == nil {
		t.Fatal("a sub-topology id that is no number was taken")
	}
	if toTaskIDs(nil) == nil {
		t.Fatal("no tasks must be an empty list, not null (null means unchanged)")
	}
	if got := (TaskID{1, 7}).String(); got != "1_7" {
		t.Fatalf("TaskID.String() = %q, want Kafka Streams' 1_7", got)
	}
}

// The changelog configs are Kafka Streams': compact for key-value stores, compact,delete with
// the retention plus windowstore.changelog.additional.retention.ms for window and session
// stores, delete for a join's window stores (they keep duplicates), min.compaction.lag.ms
// for versioned stores; a store's own retention.ms or min.compaction.lag.ms is kept.
func TestChangelogConfigsAreKafkaStreams(t *testing.T) {
	day := int64(86400000)
	cases := []struct {
		store pipeline.StoreSpec
		want  map[string]string
	}{
		{pipeline.StoreSpec{Type: pipeline.TimestampedKeyValueStoreType},
			map[string]string{"cleanup.policy": "compact", "message.timestamp.type": "CreateTime"}},
		{pipeline.StoreSpec{Type: pipeline.TimestampedWindowStoreType, Retention: 70000},
			map[string]string{"cleanup.policy": "compact,delete", "message.timestamp.type": "CreateTime", "retention.ms": "86470000"}},
		{pipeline.StoreSpec{Type: pipeline.WindowStoreType, Retention: 11000, RetainDuplicates: true},
			map[string]string{"cleanup.policy": "delete", "message.timestamp.type": "CreateTime", "retention.ms": "86411000"}},
		{pipeline.StoreSpec{Type: pipeline.SessionStoreType, Retention: 35000, TopicConfig: map[string]string{"retention.ms": "5", "segment.bytes": "1000"}},
			map[string]string{"cleanup.policy": "compact,delete", "message.timestamp.type": "CreateTime", "retention.ms": "5", "segment.bytes": "1000"}},
		{pipeline.StoreSpec{Type: pipeline.VersionedKeyValueStoreType, HistoryRetention: 500},
			map[string]string{"cleanup.policy": "compact", "message.timestamp.type": "CreateTime", "min.compaction.lag.ms": "86400500"}},
		{pipeline.StoreSpec{Type: pipeline.WindowStoreType, Retention: 1 << 62, WindowSize: 1},
			map[string]string{"cleanup.policy": "compact,delete", "message.timestamp.type": "CreateTime", "retention.ms": "9223372036854775807"}},
	}
	for _, c := range cases {
		extra := day
		if c.store.Retention == 1<<62 {
			extra = 1 << 62 // overflows: Long.MAX_VALUE, as Math.addExact's catch
		}
		got := changelogConfigs(c.store, extra)
		if !mapsEqual(got, c.want) {
			t.Errorf("%v store: %v, want %v", c.store.Type, got, c.want)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A pattern source cannot be declared: Apache Kafka 4.4 refuses regular expressions in a
// streams group's topology (and Kafka Streams 4.4 pattern subscriptions with the streams
// protocol), so the member says so before joining.
func TestPatternSourcesAreNotDeclared(t *testing.T) {
	_, err := DeclareTopology([]pipeline.SubtopologyTopics{{ID: 0, SourcePatterns: []string{"orders-.*"}}}, TopologyOptions{ReplicationFactor: -1})
	if err == nil || !strings.Contains(err.Error(), "not supported yet: pattern sources (orders-.*)") {
		t.Fatalf("got %v, want a not-supported-yet error naming the pattern", err)
	}
	if _, err := DeclareTopology(nil, TopologyOptions{}); err == nil {
		t.Fatal("a topology without tasks (only global tables) was declared")
	}
}

// The endpoint information is indexed by topic partition: the endpoint running each one's
// active task and those keeping standby copies, the entries of one endpoint (one per
// member) put together.
func TestEndpointIndexByTopicPartition(t *testing.T) {
	entry := func(host string, port uint16, active, standby map[string][]int32) kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
		e := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpoint()
		e.UserEndpoint.Host, e.UserEndpoint.Port = host, port
		for topic, ps := range active {
			tp := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition()
			tp.Topic, tp.Partitions = topic, ps
			e.ActivePartitions = append(e.ActivePartitions, tp)
		}
		for topic, ps := range standby {
			tp := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition()
			tp.Topic, tp.Partitions = topic, ps
			e.StandbyPartitions = append(e.StandbyPartitions, tp)
		}
		return e
	}
	idx := indexEndpoints([]kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{
		entry("agent-a", 9464, map[string][]int32{"in": {2, 0}, "app-rekey-repartition": {0}}, map[string][]int32{"in": {1}}),
		entry("agent-b", 9464, map[string][]int32{"in": {1}}, map[string][]int32{"in": {0}}),
		// A second member of agent-a (another thread, as Kafka Streams has).
		entry("agent-a", 9464, map[string][]int32{"in": {3}}, nil),
		entry("agent-c", 9464, nil, map[string][]int32{"in": {1}}),
	})
	tp := func(topic string, p int32) pipeline.TopicPartition {
		return pipeline.TopicPartition{Topic: topic, Partition: p}
	}
	for tp, want := range map[pipeline.TopicPartition]string{
		tp("in", 0): "agent-a:9464", tp("in", 1): "agent-b:9464", tp("in", 2): "agent-a:9464", tp("in", 3): "agent-a:9464",
		tp("app-rekey-repartition", 0): "agent-a:9464", tp("in", 4): "",
	} {
		if got := idx.Active[tp]; got != want {
			t.Errorf("active of %v: %q, want %q", tp, got, want)
		}
	}
	if got := idx.Standby[tp("in", 1)]; !slices.Equal(got, []string{"agent-a:9464", "agent-c:9464"}) {
		t.Errorf("standbys of in-1: %v", got)
	}
	a := idx.Endpoints["agent-a:9464"].Active
	if want := []pipeline.TopicPartition{tp("app-rekey-repartition", 0), tp("in", 0), tp("in", 2), tp("in", 3)}; !slices.Equal(a, want) {
		t.Errorf("agent-a runs %v, want %v (sorted, both members')", a, want)
	}
	if len(idx.Endpoints) != 3 {
		t.Errorf("endpoints %v, want the three", idx.Endpoints)
	}
}
