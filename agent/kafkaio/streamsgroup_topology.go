package kafkaio

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/pipeline"
)

// StreamsTopology is the topology a streams-group member declares when it joins (KIP-1071):
// its sub-topologies' source, repartition and changelog topics with the topic configs Kafka
// Streams 4.4 gives them, and the topics joins need co-partitioned. The broker keeps the
// first member's, creates the internal topics from it and refuses a member whose topology
// differs, so it is built exactly as Kafka Streams' StreamThread#initBrokerTopology and
// StreamsGroupHeartbeatRequestManager build theirs: a Kafka Streams application of the same
// topology and StoatFlow agents can share a group.
type StreamsTopology struct {
	subs []pipeline.SubtopologyTopics
	wire kmsg.StreamsGroupHeartbeatRequestTopology
}

// TopologyOptions are the settings of the declaration that come from the config.
type TopologyOptions struct {
	// Epoch is the topology epoch (Kafka Streams 4.4 always declares 0).
	Epoch int32
	// ReplicationFactor is replication.factor, -1 for the broker's default.
	ReplicationFactor int16
	// WindowStoreChangelogAdditionalRetention is windowstore.changelog.additional.retention.ms.
	WindowStoreChangelogAdditionalRetention time.Duration
}

// Kafka Streams' internal topic configs (InternalTopicConfig and its subclasses): what every
// internal topic gets, then what repartition topics and each kind of changelog add.
var (
	internalTopicConfigs    = map[string]string{"message.timestamp.type": "CreateTime"}
	repartitionTopicConfigs = map[string]string{"cleanup.policy": "delete", "segment.bytes": "52428800", "retention.ms": "-1"}
	// versionedCompactionLag is what VersionedChangelogTopicConfig adds to a versioned
	// store's history retention for min.compaction.lag.ms: a fixed day, not
	// windowstore.changelog.additional.retention.ms.
	versionedCompactionLag int64 = 86400000
)

// DeclareTopology builds the declaration of the sub-topologies subs (the builder's
// SubtopologyTopics for the application id).
func DeclareTopology(subs []pipeline.SubtopologyTopics, o TopologyOptions) (*StreamsTopology, error) {
	if len(subs) == 0 {
		return nil, fmt.Errorf("the topology has no sub-topology that runs as tasks (only global tables): a streams group has nothing to assign")
	}
	t := &StreamsTopology{subs: subs, wire: kmsg.NewStreamsGroupHeartbeatRequestTopology()}
	t.wire.Epoch = o.Epoch
	extra := o.WindowStoreChangelogAdditionalRetention.Milliseconds()
	for _, s := range subs {
		if len(s.SourcePatterns) > 0 {
			// The field exists (SourceTopicRegex), but Apache Kafka 4.4 answers "Regular
			// expressions for source topics are not supported yet", and Kafka Streams 4.4
			// refuses pattern subscriptions with the streams protocol.
			return nil, fmt.Errorf("not supported yet: pattern sources (%s) with group.protocol = \"streams\": "+
				"Apache Kafka 4.4 refuses regular expressions in a streams group's topology; name the topics", strings.Join(s.SourcePatterns, ", "))
		}
		w := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		w.SubtopologyID = strconv.Itoa(s.ID)
		w.SourceTopics = append([]string{}, s.SourceTopics...)
		w.SourceTopicRegex = []string{}
		w.RepartitionSinkTopics = append([]string{}, s.RepartitionSinks...)
		for _, r := range s.RepartitionSources {
			ti := kmsg.NewTopicInfo()
			ti.Topic, ti.NumPartitions, ti.ReplicationFactor = r.Name, r.Partitions, o.ReplicationFactor
			ti.Configs = topicConfigs(merged(internalTopicConfigs, repartitionTopicConfigs))
			w.RepartitionSourceTopics = append(w.RepartitionSourceTopics, ti)
		}
		for _, c := range s.Changelogs {
			ti := kmsg.NewTopicInfo()
			ti.Topic, ti.ReplicationFactor = c.Name, o.ReplicationFactor
			ti.Configs = topicConfigs(changelogConfigs(c.Store, extra))
			w.StateChangelogTopics = append(w.StateChangelogTopics, ti)
		}
		w.StateChangelogTopics = nonNil(w.StateChangelogTopics)
		w.RepartitionSourceTopics = nonNil(w.RepartitionSourceTopics)
		for _, g := range s.CopartitionGroups {
			cg, err := copartitionGroup(w, g)
			if err != nil {
				return nil, fmt.Errorf("sub-topology %d: %w", s.ID, err)
			}
			w.CopartitionGroups = append(w.CopartitionGroups, cg)
		}
		w.CopartitionGroups = nonNil(w.CopartitionGroups)
		t.wire.Subtopologies = append(t.wire.Subtopologies, w)
	}
	// Sorted by id as strings, as Kafka Streams sorts them: "10" before "2".
	sort.SliceStable(t.wire.Subtopologies, func(i, j int) bool {
		return t.wire.Subtopologies[i].SubtopologyID < t.wire.Subtopologies[j].SubtopologyID
	})
	return t, nil
}

// nonNil makes an absent list an empty one: Kafka Streams' lists are never null, and the
// broker compares declarations field by field.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// changelogConfigs are the topic configs of a store's changelog: Kafka Streams' for its
// kind, then the store's own (withLoggingEnabled), then the retention Kafka Streams sets
// unless the store's configs set it.
func changelogConfigs(s pipeline.StoreSpec, extraRetention int64) map[string]string {
	out := merged(internalTopicConfigs)
	switch s.Type {
	case pipeline.VersionedKeyValueStoreType:
		out["cleanup.policy"] = "compact"
	case pipeline.WindowStoreType, pipeline.TimestampedWindowStoreType, pipeline.SessionStoreType:
		out["cleanup.policy"] = "compact,delete"
	default:
		out["cleanup.policy"] = "compact"
	}
	for k, v := range s.TopicConfig {
		out[k] = v
	}
	if s.RetainDuplicates {
		// A window store that keeps every put (a stream-stream join's) cannot be compacted:
		// Kafka Streams' WindowStoreBuilder and StreamJoinedStoreFactory set delete over
		// the store's own configs.
		out["cleanup.policy"] = "delete"
	}
	switch s.Type {
	case pipeline.VersionedKeyValueStoreType:
		if _, set := s.TopicConfig["min.compaction.lag.ms"]; !set {
			out["min.compaction.lag.ms"] = strconv.FormatInt(addSaturating(s.HistoryRetention, versionedCompactionLag), 10)
		}
	case pipeline.WindowStoreType, pipeline.TimestampedWindowStoreType, pipeline.SessionStoreType:
		if _, set := s.TopicConfig["retention.ms"]; !set {
			out["retention.ms"] = strconv.FormatInt(addSaturating(s.Retention, extraRetention), 10)
		}
	}
	return out
}

// addSaturating is a+b, or math.MaxInt64 where Java's Math.addExact would overflow (Kafka
// Streams then uses Long.MAX_VALUE).
func addSaturating(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func merged(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// topicConfigs lists configs sorted by key, as Kafka Streams sends them.
func topicConfigs(m map[string]string) []kmsg.TopicInfoConfig {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]kmsg.TopicInfoConfig, 0, len(keys))
	for _, k := range keys {
		c := kmsg.NewTopicInfoConfig()
		c.Key, c.Value = k, m[k]
		out = append(out, c)
	}
	return out
}

// copartitionGroup names the topics of a group by their index in the sub-topology's sorted
// source and repartition source topics, in the group's order.
func copartitionGroup(w kmsg.StreamsGroupHeartbeatRequestTopologySubtopology, topics []string) (kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup, error) {
	cg := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup()
	cg.SourceTopics, cg.SourceTopicRegex, cg.RepartitionSourceTopics = []int16{}, []int16{}, []int16{}
	for _, topic := range topics {
		if i := indexOf(len(w.SourceTopics), func(i int) bool { return w.SourceTopics[i] == topic }); i >= 0 {
			cg.SourceTopics = append(cg.SourceTopics, int16(i))
		} else if i := indexOf(len(w.RepartitionSourceTopics), func(i int) bool { return w.RepartitionSourceTopics[i].Topic == topic }); i >= 0 {
			cg.RepartitionSourceTopics = append(cg.RepartitionSourceTopics, int16(i))
		} else {
			return cg, fmt.Errorf("co-partitioned topic %s is not a source of the sub-topology", topic)
		}
	}
	return cg, nil
}

func indexOf(n int, match func(int) bool) int {
	for i := 0; i < n; i++ {
		if match(i) {
			return i
		}
	}
	return -1
}

// Partitions are the topic partitions the tasks read: each task's sub-topology's source and
// repartition topics at the task's partition (pattern sources' topics are not known here).
// A task of a sub-topology the topology does not have is an error.
func (t *StreamsTopology) Partitions(tasks []TaskID) ([]pipeline.TopicPartition, error) {
	var out []pipeline.TopicPartition
	for _, task := range tasks {
		s, ok := t.subtopology(task.Subtopology)
		if !ok {
			return nil, fmt.Errorf("task %s: the topology has no sub-topology %d", task, task.Subtopology)
		}
		for _, topic := range s.SourceTopics {
			out = append(out, pipeline.TopicPartition{Topic: topic, Partition: task.Partition})
		}
		for _, r := range s.RepartitionSources {
			out = append(out, pipeline.TopicPartition{Topic: r.Name, Partition: task.Partition})
		}
	}
	return out, nil
}

func (t *StreamsTopology) subtopology(id int) (pipeline.SubtopologyTopics, bool) {
	for _, s := range t.subs {
		if s.ID == id {
			return s, true
		}
	}
	return pipeline.SubtopologyTopics{}, false
}
