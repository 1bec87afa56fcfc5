// Package metrics holds every Prometheus metric StoatFlow exports, in one file so an
// operator can read the full list in one place.
//
// Names follow stoatflow_<subsystem>_<name>_<unit>; counters end in _total; latencies are
// histograms in seconds. Labels are limited to sets whose size the operator controls
// (topics, partitions, processor nodes, stores, scripts): never a record key or value.
//
// Hot paths should resolve a labelled child once (WithLabelValues) and keep it, rather than
// looking the label values up for every record.
package metrics

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const namespace = "stoatflow"

// Reasons for RecordsDropped that the agent's exception handlers count; the engine's own are
// pipeline.DropReasons, which the agent creates at zero. These are created at zero in New,
// under node "", so an alert on their rate (summed by reason) works before the first drop.
const (
	DropDeserialization = "deserialization"
	DropProcessing      = "processing"
	DropProduction      = "production"
	DropDeadLetter      = "dead-letter"
)

// Results for Commits and Reloads, also created at zero in New.
const (
	ResultSuccess = "success"
	ResultFailure = "failure"
)

// Metrics is the agent's registry and every metric it exports.
type Metrics struct {
	registry *prometheus.Registry
	defs     []Definition

	RecordsConsumed    *prometheus.CounterVec   // label topic
	RecordsProduced    *prometheus.CounterVec   // label topic
	RecordsProcessed   *prometheus.CounterVec   // label node
	RecordsDropped     *prometheus.CounterVec   // labels node, reason
	TaskProcessed      *prometheus.CounterVec   // label task
	TaskStreamTime     *prometheus.GaugeVec     // label task; epoch milliseconds
	TaskLag            *prometheus.GaugeVec     // label task; records
	ProcessLatency     prometheus.Histogram     // per consumed record, whole topology
	RecordE2ELatency   *prometheus.HistogramVec // label node (source and terminal nodes)
	PunctuationLatency *prometheus.HistogramVec // label node

	LuaErrors *prometheus.CounterVec // label script
	LuaTime   *prometheus.CounterVec // label node; seconds spent inside Lua calls

	CommitLatency   prometheus.Histogram
	Commits         *prometheus.CounterVec   // label result
	EarlyCommits    prometheus.Counter       // barriers forced by statestore.uncommitted.max.bytes
	EpochSize       prometheus.Histogram     // records processed per epoch
	UncommittedSize *prometheus.GaugeVec     // label store
	RecordsRestored *prometheus.CounterVec   // label store
	StateRebuilds   *prometheus.CounterVec   // label when (start, running)
	StoreLatency    *prometheus.HistogramVec // labels store, operation; sampled

	ConsumerLag  *prometheus.GaugeVec // labels topic, partition
	StreamTime   *prometheus.GaugeVec // labels topic, partition; epoch milliseconds
	Watermark    prometheus.Gauge     // epoch milliseconds
	WatermarkLag prometheus.Gauge     // seconds behind wall clock

	BrokerReachable *prometheus.GaugeVec // label broker (a bootstrap server)
	// RegistryCallStart is the start (Unix seconds) of the oldest Schema Registry call in
	// progress; 0 when none is.
	RegistryCallStart prometheus.Gauge

	AppState        *prometheus.GaugeVec   // label state; 1 for the current state, 0 for the others
	Reloads         *prometheus.CounterVec // label result
	ReloadRollbacks prometheus.Counter     // reloaded topologies that failed on probation

	ThreadTasks        *prometheus.GaugeVec   // label thread
	ThreadTasksCreated *prometheus.CounterVec // label thread
	ThreadTasksClosed  *prometheus.CounterVec // label thread
	ThreadBlocked      *prometheus.CounterVec // label thread; seconds

	GroupRole  *prometheus.GaugeVec // label role (active, standby); 1 for this agent's role
	Takeovers  prometheus.Counter   // standby → active
	StandbyLag *prometheus.GaugeVec // labels store, partition; changelog records behind
}

// Values of the role label of GroupRole.
const (
	RoleActive  = "active"
	RoleStandby = "standby"
)

// StoreLatencySampleEvery is the sampling rate of StoreLatency: the engine times one
// operation in this many, of each kind on each store partition (pipeline.StoreLatencySampleEvery).
const StoreLatencySampleEvery = 64

// New creates the metrics in a registry of their own, together with the Go runtime and
// process collectors, so tests and several agents in one process never collide on the
// global default registry.
func New() *Metrics {
	m := &Metrics{registry: prometheus.NewRegistry()}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)

	m.RecordsConsumed = m.counterVec("consumer", "records_consumed_total",
		"Records read from Kafka source topics, by topic.", "topic")
	m.RecordsProduced = m.counterVec("producer", "records_produced_total",
		"Records written to Kafka sink topics (changelogs excluded), by topic.", "topic")
	m.RecordsProcessed = m.counterVec("processor", "records_processed_total",
		"Records that entered a processor node of the topology, by node name "+
			"(Kafka Streams process-total; its rate is process-rate).", "node")
	m.RecordsDropped = m.counterVec("processor", "records_dropped_total",
		"Records skipped instead of processed, by the node that dropped them and reason: late "+
			"(outside the grace period), window-closed (window already closed by the watermark), "+
			"null-key, null-value, null-foreign-key (a foreign-key join's extractor returned nil), "+
			"negative-timestamp (from the timestamp extractor), partitioner (it chose no partition), "+
			"out-of-order (a table join skipped an update of a versioned table older than its latest version, KIP-914), "+
			"stale (a foreign-key join's answer about a value its row no longer has, which the answer about the current value follows), "+
			"and as the exception handlers decide: deserialization (node: the source), processing "+
			"(a script error), production (send to Kafka failed; node empty), dead-letter (the dead "+
			"letter of a skipped record was larger than max.request.size and was not written; node "+
			"empty). Sum by reason for the application's drops.", "node", "reason")
	m.TaskProcessed = m.counterVec("task", "records_processed_total",
		"Records a task processed (consumed from its source partitions, or re-keyed to it by "+
			"another task), by task id <sub-topology>_<partition> (Kafka Streams' task-level "+
			"process-total; its rate is process-rate).", "task")
	m.TaskStreamTime = m.gaugeVec("task", "stream_time_milliseconds",
		"A task's stream time (the largest timestamp of the records it processed), by task id, "+
			"in milliseconds since the Unix epoch; updated at every commit.", "task")
	m.TaskLag = m.gaugeVec("task", "lag_records",
		"Records a task this agent runs has yet to read: the sum over its input partitions "+
			"(source and repartition topics) of the log end offset minus the consumer position "+
			"(Kafka Streams' consumer records-lag, summed by task), by task id; updated at every "+
			"commit and at least every 100 ms from the consumer's first fetch of one of them, and "+
			"gone when the task leaves the agent.", "task")
	m.ProcessLatency = m.histogram("processor", "process_latency_seconds",
		"Time to run one consumed record through the whole topology, Lua included.",
		prometheus.ExponentialBuckets(0.00001, 3, 14)) // 10µs .. ~16s
	m.RecordE2ELatency = m.histogramVec("processor", "record_e2e_latency_seconds",
		"Wall-clock time minus record timestamp when a record enters the topology at a source "+
			"node or has been processed by a terminal node, one with no children: a sink, "+
			"foreach, print, or a process or aggregation with nothing downstream (Kafka Streams "+
			"record-e2e-latency), by node.",
		prometheus.ExponentialBuckets(0.001, 4, 12), "node") // 1ms .. ~70min
	m.PunctuationLatency = m.histogramVec("processor", "punctuation_latency_seconds",
		"Duration of each call of a scheduled punctuator, by the processor node that scheduled it; "+
			"its _count is the number of punctuations (Kafka Streams punctuate-latency and punctuate-total).",
		prometheus.ExponentialBuckets(0.00001, 3, 14), "node") // 10µs .. ~16s

	m.LuaErrors = m.counterVec("lua", "errors_total",
		"Errors raised by Lua callbacks (time and memory budget overruns included), by the script file that raised them; "+
			"every loaded file has its series from the start, at zero.", "script")
	m.LuaTime = m.counterVec("lua", "execution_seconds_total",
		"Time spent inside Lua callbacks, by the processor node whose callback it was (its own "+
			"time: a callback that forwards into another node's is not charged for it; node empty "+
			"for loading the scripts); its rate is the share of one core used by Lua.", "node")

	m.CommitLatency = m.histogram("commit", "latency_seconds",
		"Duration of a commit barrier, as long as it holds up processing: the Kafka "+
			"transaction and sealing the epoch's state (exactly-once: the LevelDB batch that "+
			"applies it follows in the background), or sealing the epoch (at-least-once: its "+
			"changelog acknowledgements, state batch and offset commit follow in the "+
			"background); at a rebalance or shutdown the barrier waits for all of them.",
		prometheus.ExponentialBuckets(0.001, 2, 16)) // 1ms .. ~33s
	m.Commits = m.counterVec("commit", "commits_total",
		"Commit barriers, by result (success, or failure: the epoch was aborted and replayed).", "result")
	m.EarlyCommits = m.counter("commit", "early_commits_total",
		"Commit barriers taken before commit.interval.ms because the stores' uncommitted "+
			"bytes crossed statestore.uncommitted.max.bytes.")
	m.EpochSize = m.histogram("commit", "epoch_size_records",
		"Records consumed in one epoch, i.e. between two commit barriers, observed once the "+
			"epoch's offsets are committed.",
		prometheus.ExponentialBuckets(1, 4, 12)) // 1 .. ~4M
	m.UncommittedSize = m.gaugeVec("state", "uncommitted_bytes",
		"Bytes of store writes buffered in the current epoch, not yet committed, by store "+
			"(an early commit starts when the sum crosses statestore.uncommitted.max.bytes).", "store")
	m.RecordsRestored = m.counterVec("state", "records_restored_total",
		"Changelog records replayed into a store during restoration, by store; every logged store has its series from the start, at zero.", "store")
	m.StateRebuilds = m.counterVec("state", "rebuilds_total",
		"State databases found corrupt, deleted and rebuilt from the changelogs, by when the "+
			"corruption was found: start (opening and restoring) or running (the epoch was "+
			"dropped and processing resumed on the rebuilt stores).", "when")
	m.StoreLatency = m.histogramVec("state", "operation_latency_seconds",
		fmt.Sprintf("Duration of state store operations by processors, by store and operation: put "+
			"(writes and deletes), get (point reads), range (an iterator, from opening to closing). "+
			"Sampled: one operation in %d of each kind on each store partition is timed, so _count "+
			"is about 1/%d of the operations (Kafka Streams put/get/range-latency).",
			StoreLatencySampleEvery, StoreLatencySampleEvery),
		prometheus.ExponentialBuckets(0.000001, 4, 12), "store", "operation") // 1µs .. ~4s

	m.ConsumerLag = m.gaugeVec("consumer", "lag_records",
		"Records between the consumer position and the log end offset, by source topic and partition.",
		"topic", "partition")
	m.StreamTime = m.gaugeVec("time", "stream_time_milliseconds",
		"Stream time (largest record timestamp seen) of a source partition, "+
			"in milliseconds since the Unix epoch like Kafka timestamps.", "topic", "partition")
	m.Watermark = m.gauge("time", "watermark_milliseconds",
		"Global watermark that closes windows (minimum stream time over non-idle "+
			"partitions), in milliseconds since the Unix epoch.")
	m.WatermarkLag = m.gauge("time", "watermark_lag_seconds",
		"Wall-clock time minus the global watermark, updated at every commit and at least every "+
			"100 ms, in seconds: how far "+
			"event time trails real time.")

	m.BrokerReachable = m.gaugeVec("kafka", "broker_reachable",
		"1 when the last check of a bootstrap server got an answer to a metadata request within "+
			"request.timeout.ms, 0 when it did not; checked at start-up, at waits doubling from 1 s to 30 s until one answers, "+
			"then every 30 s.", "broker")

	m.RegistryCallStart = m.gauge("schema_registry", "call_start_time_seconds",
		"Start of the oldest Schema Registry call in progress, in seconds since the Unix epoch; 0 when "+
			"none is. Processing waits for such a call (a record's schema), so time() minus it is how long "+
			"it has been held: a call is bounded below transaction.timeout.ms (max.poll.interval.ms under at_least_once).")

	m.AppState = m.gaugeVec("app", "state",
		"Application state as in Kafka Streams (CREATED, REBALANCING, RUNNING, ...): "+
			"1 for the current state, 0 for the others.", "state")
	m.Reloads = m.counterVec("app", "reloads_total",
		"Configuration reloads (SIGHUP or POST /-/reload), by result; a failed reload keeps the running configuration.", "result")
	m.ReloadRollbacks = m.counter("app", "reload_rollbacks_total",
		"Reloaded topologies that failed on records, a punctuation or a commit while on probation "+
			"(their first minute and first committed epoch of records) and were replaced by the "+
			"topology they had replaced; the failed epoch was dropped and its records processed again.")

	m.ThreadTasks = m.gaugeVec("thread", "tasks",
		"Tasks a worker (num.stream.threads; thread 0, 1, ...) runs now: 0 on a standby of a classic group, also after the agent falls back from active to standby.", "thread")
	m.ThreadTasksCreated = m.counterVec("thread", "tasks_created_total",
		"Tasks a worker created at a commit barrier because an assignment gave them to it: its "+
			"first tasks and those it took over from another worker (Kafka Streams' thread-level "+
			"task-created-total); a topology built again (a reload, a dropped epoch) makes its "+
			"tasks anew without counting them.", "thread")
	m.ThreadTasksClosed = m.counterVec("thread", "tasks_closed_total",
		"Tasks a worker closed at a commit barrier because an assignment took them from it, "+
			"to another worker or away (Kafka Streams' thread-level task-closed-total).", "thread")
	m.ThreadBlocked = m.counterVec("thread", "blocked_seconds_total",
		"Time a worker waited for room in another worker's inbox of re-keyed records, taking "+
			"only its own inbox meanwhile (Kafka Streams' blocked-time-ns-total, in seconds).", "thread")
	m.GroupRole = m.gaugeVec("group", "role",
		"This agent's role among the agents of its application (one consumer group): 1 for "+
			"the current role, active (processes every source partition) or standby, 0 for the other; "+
			"both 0 before the first assignment.", "role")
	m.Takeovers = m.counter("group", "takeovers_total",
		"Times this agent went from standby to active (the active before it left or its "+
			"session timed out).")
	m.StandbyLag = m.gaugeVec("standby", "lag_records",
		"While this agent is a warm standby (in a streams group, for the partitions of its standby and warmup tasks): changelog records (offsets) its local state was "+
			"behind at the start of its last follow round, which reads them; rounds run every "+
			"second (while they fail, at doubling waits up to 30 s). By store and changelog partition.", "store", "partition")
	for _, role := range []string{RoleActive, RoleStandby} {
		m.GroupRole.WithLabelValues(role)
	}

	for _, reason := range []string{DropDeserialization, DropProcessing, DropProduction, DropDeadLetter} {
		m.RecordsDropped.WithLabelValues("", reason)
	}
	for _, result := range []string{ResultSuccess, ResultFailure} {
		m.Commits.WithLabelValues(result)
		m.Reloads.WithLabelValues(result)
	}
	return m
}

// Registry returns the registry holding every StoatFlow metric, for tests and for
// components that add collectors of their own.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
