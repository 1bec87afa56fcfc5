package config

import (
	"log/slog"
	"math"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Config is a checked configuration: every value typed, every default applied.
type Config struct {
	Path, Dir string   // config file and its directory (absolute; empty for Default())
	Scripts   []string // absolute paths

	HTTPListen, HTTPToken, HTTPTLSCert, HTTPTLSKey string
	HTTPAllowedHosts                               []string // lower case
	// HTTPAllowUnauthenticated and HTTPMetricsUnauthenticated are the opt-outs of the token:
	// a listener beyond loopback without one, /metrics without one.
	HTTPAllowUnauthenticated, HTTPMetricsUnauthenticated bool
	QueryMaxConcurrency                                  int
	QueryTimeout                                         time.Duration
	TapRecordsPerSecond, TapMaxClients                   int
	LogLevel                                             slog.Level
	LogFormat                                            string // "text"|"json"

	EmbeddedListen     string
	EmbeddedPartitions int32
	EmbeddedDemo       string // a demo feeder's name, or ""

	LuaCallTimeout, ShutdownTimeout time.Duration
	LuaMemoryMaxBytes               int64
	LeaveGroupOnClose               bool

	ApplicationID       string
	BootstrapServers    []string
	Embedded            bool   // bootstrap.servers = "embedded"
	ProcessingGuarantee string // "at_least_once" | "exactly_once_v2"
	CommitInterval      time.Duration
	StateDir            string // absolute
	// TransactionalStateStores, UncommittedMaxBytes and DefaultIQIsolation
	// are KIP-892's enable.transactional.statestores,
	// statestore.uncommitted.max.bytes (-1 = unbounded) and
	// default.interactive.query.isolation.level.
	TransactionalStateStores bool
	UncommittedMaxBytes      int64
	DefaultIQIsolation       string // "READ_UNCOMMITTED" | "READ_COMMITTED"
	DefaultKeySerde          string
	DefaultValueSerde        string
	// WindowSize is window.size.ms: the window size of windowed serdes that give none (0: unset).
	WindowSize time.Duration
	// DefaultTimestampExtractor is the short Kafka name, e.g. "FailOnInvalidTimestamp".
	DefaultTimestampExtractor string
	MaxTaskIdle               time.Duration // -1ms = never wait
	// CacheMaxBytes is statestore.cache.max.bytes (or its deprecated name); 0 disables.
	CacheMaxBytes     int64
	ApplicationServer string // host:port or ""
	GroupInstanceID   string
	// GroupInstanceIDSet says group.instance.id was written rather than defaulted: in a
	// streams group only such an id makes the member static, as in Kafka Streams.
	GroupInstanceIDSet bool
	// AutoOffsetReset is the consumer's auto.offset.reset: where a source partition without a
	// committed offset starts unless its source has a policy of its own.
	AutoOffsetReset   pipeline.OffsetReset
	ClientID          string // base of the clients' ids (client.id, else application.id)
	ReplicationFactor int16  // -1 = broker default
	// NumStandbyReplicas is how many standby agents keep warm state.
	NumStandbyReplicas int
	// NumStreamThreads is how many workers run the tasks (num.stream.threads).
	NumStreamThreads int
	// GroupProtocol is "classic" (one active agent) or "streams" (a streams group).
	GroupProtocol string

	BufferedRecordsPerPartition int
	PollTime                    time.Duration // poll.ms
	TaskTimeout                 time.Duration
	// TopologyOptimization is ["none"], ["all"] or a list of single optimizations.
	TopologyOptimization                    []string
	WindowStoreChangelogAdditionalRetention time.Duration
	DSLStoreFormat                          string // "DEFAULT" | "HEADERS"
	// SchemaRegistry configures the avro, protobuf and json-schema serdes.
	SchemaRegistry SchemaRegistry

	// Notices are the findings of a notice kind (KindIgnored: ignored keys; KindOverridden:
	// values replaced by Kafka Streams' forced ones), one line
	// each; `stoatflow validate` prints them as warnings.
	Notices []Problem

	// set holds the values written in the file by canonical full name;
	// client keys keep their prefix ("streams.producer.linger.ms").
	set map[string]any
	// written holds every key of the file, ignored ones too, by the same names, as the
	// TOML decoder gave them: what a reload compares.
	written map[string]any
}

// KafkaWait bounds how long the agent waits on Kafka for one step (a flush, a commit):
// the producer's request.timeout.ms, which one attempt may take, plus task.timeout.ms, how
// long retriable failures may go on, as Kafka Streams adds task.timeout.ms to the client's
// own timeout. task.timeout.ms = 0 thus fails at the first attempt that times out.
func (c *Config) KafkaWait() time.Duration {
	wait := RequestTimeout.Get(c.Client(ForProducer))
	if c.TaskTimeout > math.MaxInt64-wait {
		return math.MaxInt64
	}
	return wait + c.TaskTimeout
}

// ExactlyOnce reports processing.guarantee = exactly_once_v2.
func (c *Config) ExactlyOnce() bool { return c.ProcessingGuarantee == "exactly_once_v2" }

// Default returns a config with every default and nothing set: no scripts, no
// application.id, no bootstrap.servers; required keys and files are not checked. Only tests
// use it (`stoatflow test` needs no config).
func Default() *Config {
	b := newBuilder("")
	b.partial = true
	return b.build()
}

// value is the value of a key (by full name): as set, else its default under
// the config's processing guarantee, else nil.
func (c *Config) value(full string) any {
	if v, ok := c.set[full]; ok {
		return v
	}
	return defaultOf(full, c.ExactlyOnce())
}

func defaultOf(full string, eos bool) any {
	if eos {
		if v, ok := defaultsEOS[full]; ok {
			return v
		}
	}
	return defaults[full]
}

// isSet reports whether a key (full name, e.g. "streams.commit.interval.ms")
// was written in the file.
func (c *Config) isSet(full string) bool {
	_, ok := c.set[full]
	return ok
}
