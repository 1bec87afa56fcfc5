package kafkaio

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/IBM/sarama"
)

// TopicSpec describes a topic to create. Partitions and ReplicationFactor may be -1 to
// take the broker's defaults (num.partitions, default.replication.factor).
type TopicSpec struct {
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]*string
}

// EnsureTopics creates the topics that do not exist yet. An existing topic is left alone,
// whatever its partition count or configs.
func EnsureTopics(brokers []string, cfg *sarama.Config, topics map[string]TopicSpec) error {
	_, err := ensureTopics(brokers, cfg, topics)
	return err
}

// EnsureInternalTopics creates the application's internal topics (changelogs) that do not
// exist yet and refuses, with Kafka Streams' error (InternalTopicManager), one that exists
// with another partition count than its spec's: its partitions would not be the tasks'.
// Its configs are left as they are, as Kafka Streams leaves them.
func EnsureInternalTopics(brokers []string, cfg *sarama.Config, topics map[string]TopicSpec) error {
	existing, err := ensureTopics(brokers, cfg, topics)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(existing)) {
		if want, got := topics[name].Partitions, existing[name]; want > 0 && got != want {
			//lint:ignore ST1005 Kafka Streams' error, word for word
			return fmt.Errorf("Existing internal topic %s has invalid partitions: expected: %d; actual: %d. "+
				"Use 'org.apache.kafka.tools.StreamsResetter' tool to clean up invalid topics before processing.", name, want, got)
		}
	}
	return nil
}

// ensureTopics creates the topics that do not exist yet and returns the partition counts
// of those that did.
func ensureTopics(brokers []string, cfg *sarama.Config, topics map[string]TopicSpec) (map[string]int32, error) {
	if len(topics) == 0 {
		return nil, nil
	}
	names := make([]string, 0, len(topics))
	for name, spec := range topics {
		if name == "" {
			return nil, errors.New("ensure topics: empty topic name")
		}
		if spec.Partitions == 0 || spec.Partitions < -1 {
			return nil, fmt.Errorf("ensure topics: topic %q: partitions %d, want >= 1 or -1 (broker default)", name, spec.Partitions)
		}
		if spec.ReplicationFactor == 0 || spec.ReplicationFactor < -1 {
			return nil, fmt.Errorf("ensure topics: topic %q: replication factor %d, want >= 1 or -1 (broker default)", name, spec.ReplicationFactor)
		}
		names = append(names, name)
	}
	sort.Strings(names)

	client, err := sarama.NewClient(brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("ensure topics: connect to %v: %w", brokers, err)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("ensure topics: connect to %v: %w", brokers, err)
	}
	defer admin.Close()

	missing, existing, err := missingTopics(admin, names)
	if err != nil {
		return nil, fmt.Errorf("ensure topics: %w", err)
	}
	for _, name := range missing {
		spec := topics[name]
		detail := &sarama.TopicDetail{
			NumPartitions:     spec.Partitions,
			ReplicationFactor: spec.ReplicationFactor,
			ConfigEntries:     spec.Configs,
		}
		err := admin.CreateTopic(name, detail, false)
		// Another instance may have created it since we looked: that is what we wanted.
		if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
			return nil, fmt.Errorf("ensure topics: create %q (partitions %d, replication factor %d): %w",
				name, spec.Partitions, spec.ReplicationFactor, err)
		}
	}
	if err := waitUntilUsable(client, missing); err != nil {
		return nil, fmt.Errorf("ensure topics: %w", err)
	}
	return existing, nil
}

// createdTopicsWait bounds how long ensureTopics waits for the brokers to know the topics
// it created.
const createdTopicsWait = 30 * time.Second

// waitUntilUsable waits until every broker of the cluster lists each of topics with a leader
// for each partition, and each leader answers for its partitions. A KRaft controller
// answers CreateTopics once the topic is in its metadata log; the brokers learn of it from
// there a moment later, and a leader takes its partition on a moment after that. Until
// then a client that would use the topic gets UNKNOWN_TOPIC_OR_PARTITION or
// NOT_LEADER_OR_FOLLOWER (Kafka Streams' internal topic manager waits for the first too).
func waitUntilUsable(client sarama.Client, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	deadline := time.Now().Add(createdTopicsWait)
	for {
		err := usable(client, topics)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("created topics %v, which the brokers were not all ready for after %v: %w", topics, createdTopicsWait, err)
		}
		time.Sleep(client.Config().Metadata.Retry.Backoff)
	}
}

// usable asks each broker the client knows for the metadata of topics, then each
// partition's leader for the partition's end offset.
func usable(client sarama.Client, topics []string) error {
	cfg := client.Config()
	req := sarama.NewMetadataRequest(cfg.Version, topics)
	brokers := map[int32]*sarama.Broker{}
	ends := map[int32]*sarama.OffsetRequest{}
	for _, b := range client.Brokers() {
		brokers[b.ID()] = b
		if err := b.Open(cfg); err != nil && !errors.Is(err, sarama.ErrAlreadyConnected) {
			return fmt.Errorf("broker %d: %w", b.ID(), err)
		}
		resp, err := b.GetMetadata(req)
		if err != nil {
			return fmt.Errorf("broker %d: %w", b.ID(), err)
		}
		for _, tm := range resp.Topics {
			if tm.Err != sarama.ErrNoError {
				return fmt.Errorf("broker %d: topic %q: %w", b.ID(), tm.Name, tm.Err)
			}
			for _, pm := range tm.Partitions {
				if pm.Leader < 0 {
					return fmt.Errorf("broker %d: %s-%d has no leader yet", b.ID(), tm.Name, pm.ID)
				}
				if ends[pm.Leader] == nil {
					ends[pm.Leader] = sarama.NewOffsetRequest(cfg.Version)
				}
				ends[pm.Leader].AddBlock(tm.Name, pm.ID, sarama.OffsetNewest, 1)
			}
		}
	}
	for id, req := range ends {
		leader := brokers[id]
		if leader == nil {
			return fmt.Errorf("leader %d is not among the brokers %v", id, slices.Sorted(maps.Keys(brokers)))
		}
		resp, err := leader.GetAvailableOffsets(req)
		if err != nil {
			return fmt.Errorf("broker %d: %w", id, err)
		}
		for topic, parts := range resp.Blocks {
			for p, block := range parts {
				if block.Err != sarama.ErrNoError {
					return fmt.Errorf("broker %d: %s-%d: %w", id, topic, p, block.Err)
				}
			}
		}
	}
	return nil
}

// missingTopics returns, in the order given, the topics the cluster does not know, and the
// partition counts of those it knows.
func missingTopics(admin sarama.ClusterAdmin, names []string) ([]string, map[string]int32, error) {
	metas, err := admin.DescribeTopics(names)
	if err != nil {
		return nil, nil, fmt.Errorf("describe topics %v: %w", names, err)
	}
	exists := make(map[string]int32, len(metas))
	for _, m := range metas {
		switch m.Err {
		case sarama.ErrNoError:
			exists[m.Name] = int32(len(m.Partitions))
		case sarama.ErrUnknownTopicOrPartition:
		default:
			return nil, nil, fmt.Errorf("describe topic %q: %w", m.Name, m.Err)
		}
	}
	var missing []string
	for _, name := range names {
		if _, ok := exists[name]; !ok {
			missing = append(missing, name)
		}
	}
	return missing, exists, nil
}

// PartitionCounts returns the number of partitions of each topic. A topic that does not
// exist is an error naming it; the topic is not created.
func PartitionCounts(brokers []string, cfg *sarama.Config, topics []string) (map[string]int32, error) {
	counts, err := ExistingPartitionCounts(brokers, cfg, topics)
	if err != nil {
		return nil, err
	}
	for _, t := range topics {
		if _, ok := counts[t]; !ok {
			return nil, fmt.Errorf("partition counts: topic %q does not exist", t)
		}
	}
	return counts, nil
}

// ExistingPartitionCounts returns the number of partitions of each of the topics that
// exist; the others are left out.
func ExistingPartitionCounts(brokers []string, cfg *sarama.Config, topics []string) (map[string]int32, error) {
	counts := make(map[string]int32, len(topics))
	if len(topics) == 0 {
		return counts, nil
	}
	admin, err := sarama.NewClusterAdmin(brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("partition counts: connect to %v: %w", brokers, err)
	}
	defer admin.Close()

	metas, err := admin.DescribeTopics(topics)
	if err != nil {
		return nil, fmt.Errorf("partition counts: describe topics %v: %w", topics, err)
	}
	for _, m := range metas {
		switch m.Err {
		case sarama.ErrNoError:
			counts[m.Name] = int32(len(m.Partitions))
		case sarama.ErrUnknownTopicOrPartition:
		default:
			return nil, fmt.Errorf("partition counts: describe topic %q: %w", m.Name, m.Err)
		}
	}
	return counts, nil
}

// ListTopics lists the cluster's topics but the broker's own, sorted: what a pattern
// subscription is matched against at the start.
func ListTopics(brokers []string, cfg *sarama.Config) ([]string, error) {
	client, err := sarama.NewClient(brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("list topics: connect to %v: %w", brokers, err)
	}
	defer client.Close()
	return clusterTopics(client)
}
