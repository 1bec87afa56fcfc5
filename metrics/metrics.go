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
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const namespace = "stoatflow"

// Reasons for RecordsDropped. They are created at zero in New, so an alert on their rate
// works before the first drop.
const (
	DropLate            = "late"
	DropWindowClosed    = "window-closed"
	DropDeserialization = "deserialization"
	DropProcessing      = "processing"
	DropNullKey         = "null-key"
	DropProduction      = "production"
)

// Results for Commits and Reloads, also created at zero in New.
const (
	ResultSuccess = "success"
	ResultFailure = "failure"
)

// Metrics is the agent's registry and every metric it exports.
type Metrics struct {
	registry *prometheus.Registry

	RecordsConsumed  *prometheus.CounterVec   // label topic
	RecordsProduced  *prometheus.CounterVec   // label topic
	RecordsProcessed *prometheus.CounterVec   // label node
	RecordsDropped   *prometheus.CounterVec   // label reason
	ProcessLatency   prometheus.Histogram     // per consumed record, whole topology
	RecordE2ELatency *prometheus.HistogramVec // label node (terminal nodes only)

	LuaErrors *prometheus.CounterVec // label script
	LuaTime   prometheus.Counter     // seconds spent inside Lua calls

	CommitLatency   prometheus.Histogram
	Commits         *prometheus.CounterVec // label result
	EarlyCommits    prometheus.Counter     // barriers forced by statestore.uncommitted.max.bytes
	EpochSize       prometheus.Histogram   // records processed per epoch
	UncommittedSize *prometheus.GaugeVec   // label store
	RecordsRestored *prometheus.CounterVec // label store

	ConsumerLag *prometheus.GaugeVec // labels topic, partition
	StreamTime  *prometheus.GaugeVec // labels topic, partition; epoch milliseconds
	Watermark   prometheus.Gauge     // epoch milliseconds

	AppState *prometheus.GaugeVec   // label state; 1 for the current state, 0 for the others
	Reloads  *prometheus.CounterVec // label result
}

// New creates the metrics in a registry of their own, together with the Go runtime and
// process collectors, so tests and several agents in one process never collide on the
// global default registry.
func New() *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),

		RecordsConsumed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "consumer", Name: "records_consumed_total",
			Help: "Records read from Kafka source topics, by topic.",
		}, []string{"topic"}),
		RecordsProduced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "producer", Name: "records_produced_total",
			Help: "Records written to Kafka sink topics (changelogs excluded), by topic.",
		}, []string{"topic"}),
		RecordsProcessed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "processor", Name: "records_processed_total",
			Help: "Records that entered a processor node of the topology, by node name.",
		}, []string{"node"}),
		RecordsDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "processor", Name: "records_dropped_total",
			Help: "Records skipped instead of processed, by reason: late (outside the grace period), " +
				"window-closed (window already closed by the watermark), deserialization, processing " +
				"(a script error), null-key, production (send to Kafka failed).",
		}, []string{"reason"}),
		ProcessLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "processor", Name: "process_latency_seconds",
			Help:    "Time to run one consumed record through the whole topology, Lua included.",
			Buckets: prometheus.ExponentialBuckets(0.00001, 3, 14), // 10µs .. ~16s
		}),
		RecordE2ELatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "processor", Name: "record_e2e_latency_seconds",
			Help: "Wall-clock time minus record timestamp when a record reaches a terminal node " +
				"(Kafka Streams record-e2e-latency), by node.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 12), // 1ms .. ~70min
		}, []string{"node"}),

		LuaErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "lua", Name: "errors_total",
			Help: "Errors raised by Lua callbacks (including time-budget overruns), by script file.",
		}, []string{"script"}),
		LuaTime: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "lua", Name: "execution_seconds_total",
			Help: "Time spent inside Lua callbacks; its rate is the share of one core used by Lua.",
		}),

		CommitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "commit", Name: "latency_seconds",
			Help: "Duration of a commit barrier: Kafka transaction or offset commit plus the " +
				"LevelDB batch that applies the epoch's state.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16), // 1ms .. ~33s
		}),
		Commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "commit", Name: "commits_total",
			Help: "Commit barriers, by result (success, or failure: the epoch was aborted and replayed).",
		}, []string{"result"}),
		EarlyCommits: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "commit", Name: "early_commits_total",
			Help: "Commit barriers taken before commit.interval.ms because the stores' uncommitted " +
				"bytes crossed statestore.uncommitted.max.bytes.",
		}),
		EpochSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: namespace, Subsystem: "commit", Name: "epoch_size_records",
			Help:    "Records consumed in one epoch, i.e. between two commit barriers.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 12), // 1 .. ~4M
		}),
		UncommittedSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "state", Name: "uncommitted_bytes",
			Help: "Bytes of store writes buffered in the current epoch, not yet committed, by store " +
				"(an early commit starts when the sum crosses statestore.uncommitted.max.bytes).",
		}, []string{"store"}),
		RecordsRestored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "state", Name: "records_restored_total",
			Help: "Changelog records replayed into a store during restoration, by store.",
		}, []string{"store"}),

		ConsumerLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "consumer", Name: "lag_records",
			Help: "Records between the consumer position and the log end offset, by source topic and partition.",
		}, []string{"topic", "partition"}),
		StreamTime: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "time", Name: "stream_time_milliseconds",
			Help: "Stream time (largest record timestamp seen) of a source partition, " +
				"in milliseconds since the Unix epoch like Kafka timestamps.",
		}, []string{"topic", "partition"}),
		Watermark: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "time", Name: "watermark_milliseconds",
			Help: "Global watermark that closes windows (minimum stream time over non-idle " +
				"partitions), in milliseconds since the Unix epoch.",
		}),

		AppState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Subsystem: "app", Name: "state",
			Help: "Application state as in Kafka Streams (CREATED, REBALANCING, RUNNING, ...): " +
				"1 for the current state, 0 for the others.",
		}, []string{"state"}),
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Subsystem: "app", Name: "reloads_total",
			Help: "Configuration reloads (SIGHUP), by result; a failed reload keeps the running configuration.",
		}, []string{"result"}),
	}

	for _, reason := range []string{DropLate, DropWindowClosed, DropDeserialization, DropProcessing, DropNullKey, DropProduction} {
		m.RecordsDropped.WithLabelValues(reason)
	}
	for _, result := range []string{ResultSuccess, ResultFailure} {
		m.Commits.WithLabelValues(result)
		m.Reloads.WithLabelValues(result)
	}

	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.RecordsConsumed, m.RecordsProduced, m.RecordsProcessed, m.RecordsDropped,
		m.ProcessLatency, m.RecordE2ELatency,
		m.LuaErrors, m.LuaTime,
		m.CommitLatency, m.Commits, m.EarlyCommits, m.EpochSize, m.UncommittedSize, m.RecordsRestored,
		m.ConsumerLag, m.StreamTime, m.Watermark,
		m.AppState, m.Reloads,
	)
	return m
}

// Registry returns the registry holding every StoatFlow metric, for tests and for
// components that add collectors of their own.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
