package kafkaio

import (
	"fmt"
	"slices"

	"github.com/IBM/sarama"
)

// internalTopics are the broker's own topics, which a subscription never matches (the Java
// consumer's exclude.internal.topics, true by default).
var internalTopics = []string{"__consumer_offsets", "__transaction_state"}

// ClusterTopics refreshes the cluster's metadata and lists its topics but the broker's own,
// sorted: what a pattern subscription is matched against.
func (c *Consumer) ClusterTopics() ([]string, error) {
	topics, err := clusterTopics(c.client)
	if err != nil {
		return nil, fmt.Errorf("consumer group %q: %w", c.groupID, err)
	}
	return topics, nil
}

func clusterTopics(client sarama.Client) ([]string, error) {
	if err := client.RefreshMetadata(); err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	all, err := client.Topics()
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	out := slices.DeleteFunc(all, func(t string) bool { return slices.Contains(internalTopics, t) })
	slices.Sort(out)
	return out, nil
}

// Subscribe changes the subscription: the running generation ends (Revoking is called) and
// the member joins again with topics, as the Java consumer rejoins when a pattern
// subscription matches a new topic.
func (c *Consumer) Subscribe(topics []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if slices.Equal(c.topics, topics) {
		return
	}
	c.topics = slices.Clone(topics)
	if c.endSession != nil {
		c.endSession()
	}
}
