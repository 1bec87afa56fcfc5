package agent

import (
	"reflect"
	"testing"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/pipeline"
)

// The group's endpoint information, by topic partition, becomes store partitions: an agent
// runs partition p of every store of the sub-topology whose topic's partition p it runs,
// stores without changelog too.
func TestStorePlacementFromEndpoints(t *testing.T) {
	subs := []pipeline.SubtopologyTopics{
		{ID: 0, SourceTopics: []string{"in"}},
		{ID: 1, RepartitionSources: []pipeline.RepartitionTopic{{Name: "app-rekey-repartition"}}, Stores: []string{"counts", "unlogged"}},
	}
	tp := func(topic string, p int32) pipeline.TopicPartition {
		return pipeline.TopicPartition{Topic: topic, Partition: p}
	}
	idx := &kafkaio.EndpointIndex{Endpoints: map[string]kafkaio.EndpointPartitions{
		"a:9464": {Active: []pipeline.TopicPartition{tp("app-rekey-repartition", 0), tp("app-rekey-repartition", 2), tp("in", 1)}},
		"b:9464": {Active: []pipeline.TopicPartition{tp("app-rekey-repartition", 1), tp("in", 0)}},
	}}
	pl := storePlacement("a:9464", idx, topicSubtopologies(subs))
	want := map[string]map[string][]int32{
		"a:9464": {"counts": {0, 2}, "unlogged": {0, 2}},
		"b:9464": {"counts": {1}, "unlogged": {1}},
	}
	if !reflect.DeepEqual(pl.Hosts, want) {
		t.Fatalf("hosts %v, want %v", pl.Hosts, want)
	}
	if pl.Owner("unlogged", 1) != "b:9464" || pl.Owner("counts", 2) != "a:9464" || pl.Owner("counts", 3) != "" || pl.Self != "a:9464" {
		t.Fatalf("owners: %+v", pl)
	}
}
