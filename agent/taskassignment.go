package agent

import (
	"maps"
	"slices"

	"github.com/stoatflow/stoatflow/agent/console"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/pipeline"
)

// What GET /v1/status says about the application's tasks (its "assignment"): which agent
// runs each task and how far behind their input this agent's tasks are. In a classic group
// one agent runs every task and the others are standbys; in a streams group the broker
// spreads them, and the group's endpoint information names the agent of each.

// appTasks are the application's tasks as the running topology makes them, and the
// sub-topology whose tasks read each topic (source and repartition topics), which turns
// the endpoint information, by topic partition, into tasks.
type appTasks struct {
	ids    []pipeline.TaskID // sorted
	topics map[string]int
}

// publishAppTasks shares the application's tasks with the HTTP handlers, once the workers'
// topologies are built (they know the partition counts).
func (l *loop) publishAppTasks() error {
	var ids []pipeline.TaskID
	if err := l.workers[0].do(func() error {
		ids = l.workers[0].topo.TaskIDs()
		return nil
	}); err != nil {
		return err
	}
	slices.SortFunc(ids, pipeline.TaskID.Compare)
	topics := map[string]int{}
	for _, s := range l.b.SubtopologyTopics(l.a.cfg.ApplicationID) {
		for _, t := range s.SourceTopics {
			topics[t] = s.ID
		}
		for _, r := range s.RepartitionSources {
			topics[r.Name] = s.ID
		}
	}
	l.a.appTasks.Store(&appTasks{ids: ids, topics: topics})
	return nil
}

// reportTaskLags sets the lag of each task the agent runs from the consumer lag of each
// partition: the sum over the task's assigned partitions, -1 while the consumer has fetched
// none of them (the gauge is set only once it knows one). A task that reads no partition
// from Kafka (in a classic group, one fed by an in-memory repartition only) has nothing
// waiting there: 0. The series of tasks gone from the agent go; a standby runs none.
func (l *loop) reportTaskLags(partitionLags map[pipeline.TopicPartition]int64) {
	if l.standby {
		l.setTaskLags(nil)
		return
	}
	sums, reads, fetched := map[pipeline.TaskID]int64{}, map[pipeline.TaskID]bool{}, map[pipeline.TaskID]bool{}
	for _, tp := range l.assignment {
		id := l.taskOf(tp)
		reads[id] = true
		if lag, ok := partitionLags[tp]; ok {
			sums[id] += lag
			fetched[id] = true
		}
	}
	lags := make(map[pipeline.TaskID]int64, len(l.owners))
	for id := range l.owners {
		switch {
		case !reads[id]:
			lags[id] = 0
		case !fetched[id]:
			lags[id] = -1
		default:
			lags[id] = sums[id]
		}
	}
	l.setTaskLags(lags)
}

// setTaskLags publishes the tasks' lags (nil: the agent runs none) and sets their gauges.
func (l *loop) setTaskLags(lags map[pipeline.TaskID]int64) {
	m := l.a.metrics.TaskLag
	if old := l.a.taskLags.Load(); old != nil {
		for id := range *old {
			if lag, ok := lags[id]; !ok || lag < 0 {
				m.DeleteLabelValues(id.String())
			}
		}
	}
	for id, lag := range lags {
		if lag >= 0 {
			m.WithLabelValues(id.String()).Set(float64(lag))
		}
	}
	l.a.taskLags.Store(&lags)
}

// assignment is the status's view of the application's tasks; nil before the topology is
// built.
func (a *Agent) assignment() *console.Assignment {
	tasks := a.appTasks.Load()
	if tasks == nil {
		return nil
	}
	in := assignmentInput{protocol: a.cfg.GroupProtocol, self: a.cfg.ApplicationServer, tasks: tasks}
	if l := a.taskLags.Load(); l != nil {
		in.lags = *l
	}
	if a.streamsGroup() {
		if held := a.held.Load(); held != nil {
			in.local = held.tasks
		}
		if src := a.endpoints.Load(); src != nil {
			in.endpoints = src.index()
		}
	} else {
		in.role = a.group.Load()
	}
	return buildAssignment(in)
}

// assignmentInput is what the view of the tasks is made from.
type assignmentInput struct {
	protocol string
	self     string // application.server
	tasks    *appTasks
	// lags are the lags of the tasks this agent runs.
	lags map[pipeline.TaskID]int64
	// role is, in a classic group, this agent's role in its latest generation; nil before
	// the first.
	role *kafkaio.GroupRole
	// local are, in a streams group, the active tasks this agent runs; endpoints the
	// group's endpoint information, nil before the coordinator sent it.
	local     map[pipeline.TaskID]bool
	endpoints *kafkaio.EndpointIndex
}

func buildAssignment(in assignmentInput) *console.Assignment {
	out := &console.Assignment{GroupProtocol: in.protocol, Self: in.self, Tasks: make([]console.TaskAgent, 0, len(in.tasks.ids))}
	var owners map[pipeline.TaskID]string
	var standbys map[pipeline.TaskID][]string
	if in.endpoints != nil {
		owners, standbys = endpointTasks(in.endpoints, in.tasks.topics)
	}
	for _, id := range in.tasks.ids {
		t := console.TaskAgent{TaskID: id.String(), Standbys: []string{}}
		switch {
		case in.protocol == "streams":
			t.ThisAgent = in.local[id]
			t.Agent = owners[id]
			if t.ThisAgent {
				// The agent's own tasks are known before the endpoint information that
				// names them comes with a later heartbeat.
				t.Agent = in.self
			}
			t.Standbys = append(t.Standbys, standbys[id]...)
		case in.role != nil:
			// One agent, the generation's active, runs every task.
			t.ThisAgent = in.role.Active
			t.Agent = in.role.ActiveHost
			if t.ThisAgent {
				t.Agent = in.self
			}
			t.Standbys = append(t.Standbys, in.role.StandbyHosts...)
		}
		if t.ThisAgent {
			lag, ok := in.lags[id]
			if !ok {
				lag = -1
			}
			t.RecordsLag = &lag
		}
		out.Tasks = append(out.Tasks, t)
	}
	return out
}

// endpointTasks turns the endpoint information, by topic partition, into the agent that runs
// each task as the active and those keeping standby copies of it: a task reads partition p
// of its sub-topology's topics.
func endpointTasks(idx *kafkaio.EndpointIndex, topics map[string]int) (owners map[pipeline.TaskID]string, standbys map[pipeline.TaskID][]string) {
	owners, standbys = map[pipeline.TaskID]string{}, map[pipeline.TaskID][]string{}
	for tp, host := range idx.Active {
		if sub, ok := topics[tp.Topic]; ok {
			owners[pipeline.TaskID{Subtopology: sub, Partition: tp.Partition}] = host
		}
	}
	seen := map[pipeline.TaskID]map[string]bool{}
	for tp, hosts := range idx.Standby {
		sub, ok := topics[tp.Topic]
		if !ok {
			continue
		}
		id := pipeline.TaskID{Subtopology: sub, Partition: tp.Partition}
		if seen[id] == nil {
			seen[id] = map[string]bool{}
		}
		for _, h := range hosts {
			seen[id][h] = true
		}
	}
	for id, hosts := range seen {
		standbys[id] = slices.Sorted(maps.Keys(hosts))
	}
	return owners, standbys
}
