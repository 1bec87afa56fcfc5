package console

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/stoatflow/stoatflow/metrics"
)

// Status is what GET /v1/status answers: counters and gauges at one moment. Counters are
// totals since the agent started; a client that wants rates takes two and divides by the
// time between their At.
type Status struct {
	At    int64  `json:"at"` // wall clock, milliseconds since the epoch
	State string `json:"state"`
	// Nodes are keyed by node name: records in, drops by reason, Lua seconds.
	Nodes map[string]*NodeStatus `json:"nodes"`
	// Tasks are keyed by task id (<sub-topology>_<partition>).
	Tasks map[string]*TaskStatus `json:"tasks"`
	// Assignment is which agent runs each task of the application, with the lag of this
	// agent's tasks; null before the topology is built.
	Assignment *Assignment            `json:"assignment"`
	Consumed   map[string]float64     `json:"consumed"` // records read, by source topic
	Produced   map[string]float64     `json:"produced"` // records written, by sink topic
	Time       *TimeStatus            `json:"time"`     // null before the first records
	Stores     map[string]StoreStatus `json:"stores"`
	// Uncommitted is the epoch's buffered store writes against
	// statestore.uncommitted.max.bytes (-1: unbounded).
	Uncommitted Budget         `json:"uncommitted"`
	Restore     *RestoreStatus `json:"restore"` // null unless restoring
	Commits     CommitStatus   `json:"commits"`
	Log         []LogEntry     `json:"log"` // the last warnings and errors, oldest first
}

// NodeStatus is one node's counters.
type NodeStatus struct {
	Processed  float64            `json:"processed"`
	Dropped    map[string]float64 `json:"dropped"`
	LuaSeconds float64            `json:"luaSeconds"`
}

// TaskStatus is one task: the worker (num.stream.threads) that runs it, the records it
// processed and its stream time (-1 before its first record, updated at every commit).
type TaskStatus struct {
	Thread     int     `json:"thread"`
	Processed  float64 `json:"processed"`
	StreamTime int64   `json:"streamTime"`
}

// Assignment is which agent of the application runs each of its tasks as the active (Kafka
// Streams' StreamsMetadata, by task), and how far behind their input this agent's tasks are.
type Assignment struct {
	// GroupProtocol is group.protocol: "classic", where one agent runs every task and the
	// others are standbys, or "streams", where the broker spreads the tasks over the agents.
	GroupProtocol string `json:"groupProtocol"`
	// Self is this agent's application.server, "" when it has none.
	Self string `json:"self"`
	// Tasks are every task of the application, by sub-topology then partition.
	Tasks []TaskAgent `json:"tasks"`
}

// TaskAgent is one task of the application: the agent that runs it and, for a task of
// this agent, its lag.
type TaskAgent struct {
	TaskID string `json:"taskId"` // <sub-topology>_<partition>
	// Agent is the application.server of the agent that runs the task; "" when none is
	// named: this agent without an application.server (ThisAgent), a task moving between
	// agents, or one run by an agent without an application.server.
	Agent     string `json:"agent"`
	ThisAgent bool   `json:"thisAgent"`
	// Standbys are the application.server of the agents keeping a standby copy of the
	// task's state, sorted.
	Standbys []string `json:"standbys"`
	// RecordsLag, for a task this agent runs, is the records its consumer has yet to read:
	// the sum over the task's input partitions (source and repartition topics) of their end
	// offset minus the consumer's position, Kafka Streams' consumer records-lag per task;
	// -1 before the consumer fetched any of them. Null for another agent's task: only that
	// agent knows its lag.
	RecordsLag *int64 `json:"recordsLag"`
}

// TimeStatus is the engine's time: the global watermark and each source partition's part
// in it, with the partition's consumer lag.
type TimeStatus struct {
	Watermark  int64             `json:"watermark"` // -1 before there is one
	Partitions []PartitionStatus `json:"partitions"`
}

// PartitionStatus is one source partition.
type PartitionStatus struct {
	Topic      string `json:"topic"`
	Partition  int32  `json:"partition"`
	StreamTime int64  `json:"streamTime"` // -1 before its first record
	Idle       bool   `json:"idle"`
	HoldsBack  bool   `json:"holdsBack"`
	Lag        int64  `json:"lag"` // -1 when the consumer does not know it yet
	// Position is the next offset the consumer reads, -1 before it reads the partition: two
	// statuses tell how fast records arrive, which idleness does not (a partition whose
	// consumer keeps up is idle between its records).
	Position int64 `json:"position"`
}

// StoreStatus is one state store.
type StoreStatus struct {
	SizeBytes        int64   `json:"sizeBytes"` // on disk, committed data (approximate)
	UncommittedBytes float64 `json:"uncommittedBytes"`
	Restored         float64 `json:"restored"` // changelog records replayed since start
}

// Budget is an amount against its limit.
type Budget struct {
	Bytes    float64 `json:"bytes"`
	MaxBytes int64   `json:"maxBytes"`
}

// CommitStatus counts commit barriers.
type CommitStatus struct {
	Succeeded float64 `json:"succeeded"`
	Failed    float64 `json:"failed"` // aborted epochs, processed again
	Early     float64 `json:"early"`  // forced by the uncommitted bytes
	// LatencySeconds is the sum of the barriers' durations, LatencyCount their number.
	LatencySeconds float64 `json:"latencySeconds"`
	LatencyCount   uint64  `json:"latencyCount"`
}

func (s *Server) status() *Status {
	m := s.src.Metrics
	st := &Status{
		At:       time.Now().UnixMilli(),
		State:    s.src.State(),
		Nodes:    map[string]*NodeStatus{},
		Tasks:    map[string]*TaskStatus{},
		Consumed: map[string]float64{},
		Produced: map[string]float64{},
		Time:     s.src.Time(),
		Stores:   map[string]StoreStatus{},
		Restore:  s.src.Restore.Status(),
		Log:      s.src.Log.Recent(),
	}
	if s.src.Assignment != nil {
		st.Assignment = s.src.Assignment()
	}
	node := func(name string) *NodeStatus {
		n, ok := st.Nodes[name]
		if !ok {
			n = &NodeStatus{Dropped: map[string]float64{}}
			st.Nodes[name] = n
		}
		return n
	}
	for _, name := range s.src.Nodes() {
		node(name)
	}
	each(m.RecordsProcessed, func(l labels, x *dto.Metric) { node(l["node"]).Processed = x.GetCounter().GetValue() })
	each(m.RecordsDropped, func(l labels, x *dto.Metric) {
		if v := x.GetCounter().GetValue(); l["node"] != "" {
			node(l["node"]).Dropped[l["reason"]] = v
		}
	})
	each(m.LuaTime, func(l labels, x *dto.Metric) {
		if l["node"] != "" {
			node(l["node"]).LuaSeconds = x.GetCounter().GetValue()
		}
	})
	if s.src.Tasks != nil {
		for id, thread := range s.src.Tasks() {
			st.Tasks[id] = &TaskStatus{Thread: thread, StreamTime: -1}
		}
	}
	each(m.TaskProcessed, func(l labels, x *dto.Metric) {
		if t := st.Tasks[l["task"]]; t != nil {
			t.Processed = x.GetCounter().GetValue()
		}
	})
	each(m.TaskStreamTime, func(l labels, x *dto.Metric) {
		if t := st.Tasks[l["task"]]; t != nil {
			t.StreamTime = int64(x.GetGauge().GetValue())
		}
	})
	each(m.RecordsConsumed, func(l labels, x *dto.Metric) { st.Consumed[l["topic"]] = x.GetCounter().GetValue() })
	each(m.RecordsProduced, func(l labels, x *dto.Metric) { st.Produced[l["topic"]] = x.GetCounter().GetValue() })

	sizes := s.src.StoreSizes()
	store := func(name string, f func(*StoreStatus)) {
		v := st.Stores[name]
		f(&v)
		st.Stores[name] = v
	}
	for name, size := range sizes {
		store(name, func(v *StoreStatus) { v.SizeBytes = size })
	}
	each(m.UncommittedSize, func(l labels, x *dto.Metric) {
		store(l["store"], func(v *StoreStatus) { v.UncommittedBytes = x.GetGauge().GetValue() })
		st.Uncommitted.Bytes += x.GetGauge().GetValue()
	})
	each(m.RecordsRestored, func(l labels, x *dto.Metric) {
		store(l["store"], func(v *StoreStatus) { v.Restored = x.GetCounter().GetValue() })
	})
	st.Uncommitted.MaxBytes = s.src.UncommittedMaxBytes

	each(m.Commits, func(l labels, x *dto.Metric) {
		switch l["result"] {
		case metrics.ResultSuccess:
			st.Commits.Succeeded = x.GetCounter().GetValue()
		case metrics.ResultFailure:
			st.Commits.Failed = x.GetCounter().GetValue()
		}
	})
	each(m.EarlyCommits, func(_ labels, x *dto.Metric) { st.Commits.Early = x.GetCounter().GetValue() })
	each(m.CommitLatency, func(_ labels, x *dto.Metric) {
		st.Commits.LatencySeconds = x.GetHistogram().GetSampleSum()
		st.Commits.LatencyCount = x.GetHistogram().GetSampleCount()
	})
	return st
}

type labels map[string]string

// each reads every series c collects.
func each(c prometheus.Collector, f func(labels, *dto.Metric)) {
	ch := make(chan prometheus.Metric, 64)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	for pm := range ch {
		var x dto.Metric
		if err := pm.Write(&x); err != nil {
			continue // a series that cannot be read is left out of the status
		}
		l := labels{}
		for _, p := range x.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		f(l, &x)
	}
}
