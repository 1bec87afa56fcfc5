package agent

import (
	"fmt"
	"slices"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/pipeline"
)

// Re-keyed records reach the task of their partition in one of two ways. An agent that runs
// every task of its application (group.protocol = "classic": one active) hands them over in
// memory, through the workers' exchange. When an application's tasks are spread over several
// agents (a streams group, issue 31), the task may run elsewhere, so they go through the
// repartition topics themselves, as in Kafka Streams: the workers' topologies write them
// (pipeline.TopologyOptions.RepartitionTopics) inside the epoch's transaction, the consumer
// reads those topics (read_committed under exactly-once) as it reads the sources, and the
// worker that runs the reading task hands each record to Topology.ProcessInternal. Their
// consumed offsets are committed with the sources'.

// internalSources are the repartition topics (with the application id) the application's
// sub-topologies read, sorted.
func internalSources(b *pipeline.StreamsBuilder, appID string) []string {
	var out []string
	for _, sub := range b.SubtopologyTopics(appID) {
		for _, r := range sub.RepartitionSources {
			out = append(out, r.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// subscribeInternal adds the repartition topics to the consumer's subscription. They must
// exist: a streams group's coordinator creates them before it assigns any task.
func (a *Agent) subscribeInternal(k *kafkaClients, b *pipeline.StreamsBuilder) error {
	if b.HasPatternSources() {
		return fmt.Errorf("not supported yet: pattern sources in a streams group (Apache Kafka 4.4 refuses regular expressions in a streams group's topology)")
	}
	topics := internalSources(b, a.cfg.ApplicationID)
	if len(topics) == 0 {
		return nil
	}
	counts, err := kafkaio.PartitionCounts(k.brokers, k.adminCfg, topics)
	if err != nil {
		return err
	}
	for _, t := range topics {
		if counts[t] == 0 {
			return fmt.Errorf("repartition topic %s does not exist (the streams group's coordinator creates it when the group's topology is declared)", t)
		}
	}
	k.subscription = append(k.subscription, topics...)
	k.internal = map[string]bool{}
	for _, t := range topics {
		k.internal[t] = true
	}
	return nil
}

// internalByTopic maps the topology's internal topics to their names with the application
// id, when it writes them; nil when it routes them in memory.
func internalByTopic(topo *pipeline.Topology, appID string, throughTopics bool) map[string]pipeline.InternalTopic {
	if !throughTopics {
		return nil
	}
	out := map[string]pipeline.InternalTopic{}
	for _, it := range topo.InternalTopics() {
		out[appID+"-"+it.Name] = it
	}
	return out
}

// sourcesOnly leaves out of tps the partitions of repartition topics: the watermark is over
// the source partitions, as when re-keyed records go in memory.
func (k *kafkaClients) sourcesOnly(tps []pipeline.TopicPartition) []pipeline.TopicPartition {
	if len(k.internal) == 0 || tps == nil {
		return tps
	}
	out := make([]pipeline.TopicPartition, 0, len(tps))
	for _, tp := range tps {
		if !k.internal[tp.Topic] {
			out = append(out, tp)
		}
	}
	return out
}
