package agent

import (
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/agent/query"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
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

// The standby partitions of the endpoint information name the agents keeping standby
// copies of each store partition (KeyQueryMetadata.standbyHosts, allMetadata's standby
// partitions).
func TestStorePlacementNamesStandbyCopies(t *testing.T) {
	subs := []pipeline.SubtopologyTopics{
		{ID: 1, RepartitionSources: []pipeline.RepartitionTopic{{Name: "app-rekey-repartition"}}, Stores: []string{"counts"}},
	}
	tp := func(p int32) pipeline.TopicPartition {
		return pipeline.TopicPartition{Topic: "app-rekey-repartition", Partition: p}
	}
	idx := &kafkaio.EndpointIndex{Endpoints: map[string]kafkaio.EndpointPartitions{
		"a:9464": {Active: []pipeline.TopicPartition{tp(0)}, Standby: []pipeline.TopicPartition{tp(1)}},
		"b:9464": {Active: []pipeline.TopicPartition{tp(1)}, Standby: []pipeline.TopicPartition{tp(0)}},
		"c:9464": {Standby: []pipeline.TopicPartition{tp(0)}},
	}}
	pl := storePlacement("a:9464", idx, topicSubtopologies(subs))
	if got := pl.StandbyHosts("counts", 0); !reflect.DeepEqual(got, []string{"b:9464", "c:9464"}) {
		t.Fatalf("standby hosts of counts-0: %v", got)
	}
	if got := pl.StandbyHosts("counts", 1); !reflect.DeepEqual(got, []string{"a:9464"}) {
		t.Fatalf("standby hosts of counts-1: %v", got)
	}
	if got := pl.Standbys["c:9464"]; !reflect.DeepEqual(got, map[string][]int32{"counts": {0}}) {
		t.Fatalf("c's standby partitions: %v", got)
	}
}

// A kept task's offsets are its store partitions' changelog positions and ends summed, as
// Kafka Streams sums them per task; a task whose partitions were not all read, or without a
// logged store, is left out.
func TestTaskOffsetsSumTheTasksStores(t *testing.T) {
	stores := map[int][]string{1: {"counts", "other"}}
	copies := map[state.ChangelogPartition]query.LagInfo{
		{Store: "counts", Partition: 0}: {CurrentOffsetPosition: 10, EndOffsetPosition: 12},
		{Store: "other", Partition: 0}:  {CurrentOffsetPosition: 5, EndOffsetPosition: 5},
		{Store: "counts", Partition: 1}: {CurrentOffsetPosition: 3, EndOffsetPosition: 3},
	}
	kept := []kafkaio.TaskID{{Subtopology: 1, Partition: 0}, {Subtopology: 1, Partition: 1}, {Subtopology: 0, Partition: 0}}
	offsets, ends := taskOffsets(kept, stores, copies)
	t10 := kafkaio.TaskID{Subtopology: 1, Partition: 0}
	if !reflect.DeepEqual(offsets, map[kafkaio.TaskID]int64{t10: 15}) || !reflect.DeepEqual(ends, map[kafkaio.TaskID]int64{t10: 17}) {
		t.Fatalf("offsets %v, ends %v", offsets, ends)
	}
}

// In a streams group a partition of a standby task answers as a standby copy with its lag
// once followed, and is refused, saying why, before; another agent's partition is not held.
func TestHoldingStandbyTaskInStreamsGroup(t *testing.T) {
	a := &Agent{cfg: &config.Config{GroupProtocol: "streams"}}
	a.held.Store(&heldTasks{tasks: map[pipeline.TaskID]bool{{Subtopology: 1, Partition: 0}: true},
		kept: map[pipeline.TaskID]bool{{Subtopology: 1, Partition: 1}: true}, stores: map[string]int{"counts": 1}})
	v := queryView{a: a}
	if h := v.Holding("counts", 0); !h.Active {
		t.Fatalf("active partition: %+v", h)
	}
	if h := v.Holding("counts", 1); h.Standby || !strings.Contains(h.Why, "has not read its changelog yet") {
		t.Fatalf("standby partition before its first round: %+v", h)
	}
	lag := query.LagInfo{CurrentOffsetPosition: 7, EndOffsetPosition: 9, OffsetLag: 2}
	a.copies.Store(&map[state.ChangelogPartition]query.LagInfo{{Store: "counts", Partition: 1}: lag})
	if h := v.Holding("counts", 1); !h.Standby || h.Lag != lag {
		t.Fatalf("followed standby partition: %+v", h)
	}
	if h := v.Holding("counts", 2); h.Active || h.Standby || !strings.Contains(h.Why, "another agent") {
		t.Fatalf("another agent's partition: %+v", h)
	}
}

// In a streams group GET /readyz names, as activeHosts, the application.server of every
// agent the group's endpoint information says runs active tasks (stateless ones too, not
// those keeping only standby tasks), once the coordinator named them; the classic mode's
// single active agent keeps its fields, active and activeHost.
func TestReadyzNamesTheActiveAgentsOfAStreamsGroup(t *testing.T) {
	s, machine := startServer(t, HTTPOptions{})
	if err := machine.Transition(StateRebalancing); err != nil {
		t.Fatal(err)
	}
	if err := machine.Transition(StateRunning); err != nil {
		t.Fatal(err)
	}
	var idx atomic.Pointer[kafkaio.EndpointIndex]
	a := &Agent{cfg: &config.Config{GroupProtocol: "streams"}}
	subs := []pipeline.SubtopologyTopics{
		{ID: 0, SourceTopics: []string{"in"}},
		{ID: 1, RepartitionSources: []pipeline.RepartitionTopic{{Name: "app-rekey-repartition"}}, Stores: []string{"counts"}},
	}
	a.endpoints.Store(&endpointSource{index: idx.Load, self: "a:9464", topics: topicSubtopologies(subs)})
	s.ReportActive(a.activeMember)
	s.ReportActiveHosts(a.activeHosts)
	readyz := func() string { return httpGet(t, "http://"+s.Addr()+"/readyz") }
	if got := readyz(); got != `{"state":"RUNNING"}`+"\n" {
		t.Fatalf("/readyz before the coordinator named the agents: %q", got)
	}
	tp := func(topic string, p int32) pipeline.TopicPartition {
		return pipeline.TopicPartition{Topic: topic, Partition: p}
	}
	idx.Store(&kafkaio.EndpointIndex{Endpoints: map[string]kafkaio.EndpointPartitions{
		"b:9464": {Active: []pipeline.TopicPartition{tp("app-rekey-repartition", 1)}, Standby: []pipeline.TopicPartition{tp("app-rekey-repartition", 0)}},
		"a:9464": {Active: []pipeline.TopicPartition{tp("in", 0)}},
		"c:9464": {Standby: []pipeline.TopicPartition{tp("app-rekey-repartition", 1)}},
	}})
	if got := readyz(); got != `{"state":"RUNNING","activeHosts":["a:9464","b:9464"]}`+"\n" {
		t.Fatalf("/readyz in a streams group: %q", got)
	}

	classic := &Agent{cfg: &config.Config{GroupProtocol: "classic"}}
	classic.group.Store(&kafkaio.GroupRole{Active: true, ActiveInstance: "app-a", ActiveHost: "a:9464"})
	s.ReportActive(classic.activeMember)
	s.ReportActiveHosts(classic.activeHosts)
	if got := readyz(); got != `{"state":"RUNNING","active":"app-a","activeHost":"a:9464"}`+"\n" {
		t.Fatalf("/readyz of the classic mode: %q", got)
	}
}
