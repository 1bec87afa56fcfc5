package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/agent/query"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// With group.protocol = "streams" the agent is a member of its application's streams group
// (KIP-1071, group id = application.id): it declares the topology, the broker creates the
// internal topics and assigns the tasks, and the agent runs the active tasks it is given.
// The consumer (kafkaio.NewStreamsConsumer) turns each change of the member's tasks into a
// generation, as a classic group's rebalance: the loop commits at the barrier before the
// tasks go (Revoking), then takes the new ones, restoring their stores from the changelogs
// (Assigned). Re-keyed records go through the repartition topics (repartition.go).

// streamsGroup reports whether the agent runs in a streams group.
func (a *Agent) streamsGroup() bool { return a.cfg.GroupProtocol == "streams" }

// joinStreamsGroup joins the application's streams group with b's topology and waits until
// the broker made the internal topics (repartition and changelog) the agent reads and
// writes, as Kafka Streams waits for them before it runs tasks.
func (a *Agent) joinStreamsGroup(ctx context.Context, k *kafkaClients, b *pipeline.StreamsBuilder) error {
	cfg := a.cfg
	subs := b.SubtopologyTopics(cfg.ApplicationID)
	topo, err := kafkaio.DeclareTopology(subs, kafkaio.TopologyOptions{
		ReplicationFactor:                       cfg.ReplicationFactor,
		WindowStoreChangelogAdditionalRetention: cfg.WindowStoreChangelogAdditionalRetention,
	})
	if err != nil {
		return err
	}
	sc, err := kafkaio.SaramaConfig(cfg, kafkaio.RoleConsumer)
	if err != nil {
		return err
	}
	consumer := cfg.Client(config.ForConsumer)
	m, err := kafkaio.JoinStreamsGroup(kafkaio.StreamsMemberConfig{
		Brokers: k.brokers, Client: sc, Group: cfg.ApplicationID,
		Endpoint:         cfg.ApplicationServer,
		InstanceID:       staticInstanceID(cfg),
		ProcessID:        a.processID,
		RackID:           config.ClientRack.Get(consumer),
		RebalanceTimeout: config.MaxPollInterval.Get(consumer),
		RequestTimeout:   config.RequestTimeout.Get(consumer),
		RetryBackoff:     config.RetryBackoff.Get(consumer),
		Topology:         topo,
		Logger:           a.log,
	})
	if err != nil {
		return err
	}
	k.member = m
	k.tasks = taskPartitions(subs)
	a.endpoints.Store(&endpointSource{index: m.Endpoints, self: cfg.ApplicationServer, topics: topicSubtopologies(subs)})
	var internal []string
	for _, s := range subs {
		for _, r := range s.RepartitionSources {
			internal = append(internal, r.Name)
		}
		for _, c := range s.Changelogs {
			internal = append(internal, c.Name)
		}
	}
	a.log.Info("joined the streams group; waiting for the broker to make the internal topics", "group", cfg.ApplicationID,
		"process id", a.processID, "topics", internal)
	wait := 100 * time.Millisecond
	for {
		counts, err := kafkaio.ExistingPartitionCounts(k.brokers, k.adminCfg, internal)
		if err == nil && len(counts) == len(internal) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-m.Done():
			return fmt.Errorf("streams group %s: %w", cfg.ApplicationID, m.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// taskPartitions lists each task's partitions: the partition of the task's number of its
// sub-topology's source and repartition topics.
func taskPartitions(subs []pipeline.SubtopologyTopics) func(kafkaio.TaskID) []pipeline.TopicPartition {
	topics := map[int][]string{}
	for _, s := range subs {
		t := slices.Clone(s.SourceTopics)
		for _, r := range s.RepartitionSources {
			t = append(t, r.Name)
		}
		topics[s.ID] = t
	}
	return func(id kafkaio.TaskID) []pipeline.TopicPartition {
		var out []pipeline.TopicPartition
		for _, t := range topics[id.Subtopology] {
			out = append(out, pipeline.TopicPartition{Topic: t, Partition: id.Partition})
		}
		return out
	}
}

// takeTasks readies the agent for the tasks of a new generation of its streams group: the
// following of the last generation's standby and warmup tasks stops, the store partitions
// of its active tasks catch up with their changelogs (a task new here may have run on
// another agent since this one last had it: a standby or warmup task kept here replays only
// the tail), the topology starts afresh from them, and the generation's standby and warmup
// tasks are followed (streamsstandby.go). As Kafka Streams restores only the stores of the
// tasks it is given, the store partitions of tasks elsewhere are not read: they stand where
// this agent left them, and catch up when a task of theirs comes back.
func (l *loop) takeTasks(ctx context.Context, tps []pipeline.TopicPartition) error {
	l.follow.stop()
	ids := map[pipeline.TaskID]bool{}
	for _, tp := range tps {
		ids[l.taskOf(tp)] = true
	}
	if err := l.catchUp(ctx, false, activeScope(ids, l.loggedStores())); err != nil {
		return err
	}
	l.active = ids
	tasks := l.k.consumer.Tasks()
	kept := append(slices.Clone(tasks.Standby), tasks.Warmup...)
	held := &heldTasks{tasks: ids, kept: map[pipeline.TaskID]bool{}, stores: map[string]int{}}
	for _, t := range kept {
		held.kept[pipeline.TaskID(t)] = true
	}
	for _, s := range l.b.SubtopologyTopics(l.a.cfg.ApplicationID) {
		for _, name := range s.Stores {
			held.stores[name] = s.ID
		}
	}
	l.a.held.Store(held)
	l.keepTasks(ctx, kept)
	return nil
}

// activeScope narrows a restore to the logged store partitions of the active tasks.
func activeScope(tasks map[pipeline.TaskID]bool, logged map[int][]string) *readScope {
	want := map[state.ChangelogPartition]bool{}
	for t := range tasks {
		for _, name := range logged[t.Subtopology] {
			want[state.ChangelogPartition{Store: name, Partition: t.Partition}] = true
		}
	}
	return &readScope{want: want}
}

// heldTasks are the active tasks an agent runs in its streams group, the standby and
// warmup tasks it keeps, and the sub-topology of each store, to tell which store partitions
// are current here and which are copies.
type heldTasks struct {
	tasks  map[pipeline.TaskID]bool
	kept   map[pipeline.TaskID]bool
	stores map[string]int
}

// holds reports whether the agent runs the task of a store's partition (a store without
// changelog too: its local partitions are the ones its tasks here write).
func (h *heldTasks) holds(store string, p int32) bool {
	sub, ok := h.stores[store]
	return ok && h.tasks[pipeline.TaskID{Subtopology: sub, Partition: p}]
}

// taskOf is the task that reads a partition: a source's, or a repartition topic's.
func (l *loop) taskOf(tp pipeline.TopicPartition) pipeline.TaskID {
	id, ok := l.sources.Of(tp)
	if it, internal := l.internal[tp.Topic]; !ok && internal {
		id = pipeline.TaskID{Subtopology: it.Subtopology, Partition: tp.Partition}
	}
	return id
}

// staticInstanceID is the streams-group member's group.instance.id: the one written in the
// config, which makes the member static, as Kafka Streams 4.4 does; "" (dynamic) when it is
// the default <application.id>-<hostname>.
func staticInstanceID(cfg *config.Config) string {
	if !cfg.GroupInstanceIDSet {
		return ""
	}
	return cfg.GroupInstanceID
}

// closeMember leaves the streams group, after the consumer committed and let go of its
// tasks: for good with leaveGroup (leave.group.on.close, or a close asking for it), else a
// static member leaves for now and its tasks wait for its restart until its session ends.
func (k *kafkaClients) closeMember(leaveGroup bool, timeout time.Duration) error {
	if k.member == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	mode := kafkaio.LeaveDefault
	if leaveGroup {
		mode = kafkaio.LeaveGroup
	}
	err := k.member.Close(ctx, mode)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("leave the streams group: %w", err)
	}
	return err
}

// topicSubtopologies maps each topic a task reads (source and repartition) to its
// sub-topology, with the stores of each sub-topology: what turns the group's endpoint
// information, by topic partition, into store partitions.
func topicSubtopologies(subs []pipeline.SubtopologyTopics) map[string][]string {
	out := map[string][]string{}
	for _, s := range subs {
		for _, t := range s.SourceTopics {
			out[t] = s.Stores
		}
		for _, r := range s.RepartitionSources {
			out[r.Name] = s.Stores
		}
	}
	return out
}

// endpointSource is where the agent reads which agent of its streams group runs each store
// partition: its member's endpoint information, and the stores each topic's tasks hold.
type endpointSource struct {
	index  func() *kafkaio.EndpointIndex // the member's latest endpoint information; nil before any
	self   string                        // application.server
	topics map[string][]string           // topic → the stores of the sub-topology reading it
	// last is the placement made from the member's latest endpoint information, remade
	// when a heartbeat brings newer.
	last atomic.Pointer[placementOf]
}

type placementOf struct {
	index *kafkaio.EndpointIndex
	pl    *query.Placement
}

// placement is which agent runs each store partition; nil before the coordinator named them.
func (s *endpointSource) placement() *query.Placement {
	idx := s.index()
	if idx == nil {
		return nil
	}
	if last := s.last.Load(); last != nil && last.index == idx {
		return last.pl
	}
	pl := storePlacement(s.self, idx, s.topics)
	s.last.Store(&placementOf{index: idx, pl: pl})
	return pl
}

// activeHosts names, in a streams group, the agents running active tasks for GET /readyz,
// as the group's endpoint information names them: the placement queries are routed by.
func (a *Agent) activeHosts() []string {
	if !a.streamsGroup() {
		return nil
	}
	if src := a.endpoints.Load(); src != nil {
		return src.activeHosts()
	}
	return nil
}

// activeHosts are the application.server of the agents of the group running active tasks,
// stateless ones too, sorted; nil before the coordinator named them. An agent without
// application.server sends the group no endpoint, so it is not among them.
func (s *endpointSource) activeHosts() []string {
	idx := s.index()
	if idx == nil {
		return nil
	}
	var out []string
	for host, ep := range idx.Endpoints {
		if len(ep.Active) > 0 {
			out = append(out, host)
		}
	}
	slices.Sort(out)
	return out
}

// storePlacement turns the endpoint information into store partitions: an agent runs
// partition p of a store when it runs the active task of partition p of a topic of the
// store's sub-topology, and keeps a copy of it when it runs such a standby task.
func storePlacement(self string, idx *kafkaio.EndpointIndex, topics map[string][]string) *query.Placement {
	hosts, standbys := map[string]map[string][]int32{}, map[string]map[string][]int32{}
	for host, ep := range idx.Endpoints {
		hosts[host] = storePartitions(ep.Active, topics)
		if len(ep.Standby) > 0 {
			standbys[host] = storePartitions(ep.Standby, topics)
		}
	}
	return query.NewPlacementWithStandbys(self, hosts, standbys)
}

// storePartitions are the store partitions of the tasks reading tps.
func storePartitions(tps []pipeline.TopicPartition, topics map[string][]string) map[string][]int32 {
	stores := map[string][]int32{}
	for _, tp := range tps {
		for _, name := range topics[tp.Topic] {
			stores[name] = append(stores[name], tp.Partition)
		}
	}
	for name, ps := range stores {
		slices.Sort(ps)
		stores[name] = slices.Compact(ps)
	}
	return stores
}
