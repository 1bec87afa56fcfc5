package kafkaio

import (
	"errors"
	"fmt"
	"sort"

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
// whatever its partition count or configs, as Kafka Streams does for its internal topics.
func EnsureTopics(brokers []string, cfg *sarama.Config, topics map[string]TopicSpec) error {
	if len(topics) == 0 {
		return nil
	}
	names := make([]string, 0, len(topics))
	for name, spec := range topics {
		if name == "" {
			return errors.New("ensure topics: empty topic name")
		}
		if spec.Partitions == 0 || spec.Partitions < -1 {
			return fmt.Errorf("ensure topics: topic %q: partitions %d, want >= 1 or -1 (broker default)", name, spec.Partitions)
		}
		if spec.ReplicationFactor == 0 || spec.ReplicationFactor < -1 {
			return fmt.Errorf("ensure topics: topic %q: replication factor %d, want >= 1 or -1 (broker default)", name, spec.ReplicationFactor)
		}
		names = append(names, name)
	}
	sort.Strings(names)

	admin, err := sarama.NewClusterAdmin(brokers, cfg)
	if err != nil {
		return fmt.Errorf("ensure topics: connect to %v: %w", brokers, err)
	}
	defer admin.Close()

	missing, err := missingTopics(admin, names)
	if err != nil {
		return fmt.Errorf("ensure topics: %w", err)
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
			return fmt.Errorf("ensure topics: create %q (partitions %d, replication factor %d): %w",
				name, spec.Partitions, spec.ReplicationFactor, err)
		}
	}
	return nil
}

// missingTopics returns, in the order given, the topics the cluster does not know.
func missingTopics(admin sarama.ClusterAdmin, names []string) ([]string, error) {
	metas, err := admin.DescribeTopics(names)
	if err != nil {
		return nil, fmt.Errorf("describe topics %v: %w", names, err)
	}
	exists := make(map[string]bool, len(metas))
	for _, m := range metas {
		switch m.Err {
		case sarama.ErrNoError:
			exists[m.Name] = true
		case sarama.ErrUnknownTopicOrPartition:
		default:
			return nil, fmt.Errorf("describe topic %q: %w", m.Name, m.Err)
		}
	}
	var missing []string
	for _, name := range names {
		if !exists[name] {
			missing = append(missing, name)
		}
	}
	return missing, nil
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
