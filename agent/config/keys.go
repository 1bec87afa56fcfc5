// Package config loads agent.toml: the Kafka Streams properties under [streams]
// (with their Kafka names and defaults), the Kafka client properties StoatFlow
// maps onto sarama, and StoatFlow's own [agent] settings.
//
// Every key is declared once, in the tables of keys.go, schemaregistry.go and
// clientkeys.go; parsing, validation, "did you mean", --help and docs/config.md all
// come from them, and the declaration returns the typed handle the key is read
// through (handles.go).
package config

import (
	"fmt"
	"time"

	"github.com/stoatflow/stoatflow/agent/demo"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
)

// Section is the TOML table a key lives in.
type Section string

const (
	SectionAgent   Section = "agent"
	SectionStreams Section = "streams"
)

// Type is how a key's value is written and checked.
type Type int

const (
	TypeString   Type = iota
	TypeInt           // 32-bit integer
	TypeLong          // 64-bit integer
	TypeBool          // true/false (also the strings "true"/"false", as in Java properties)
	TypeDuration      // integer milliseconds or a duration string like "250ms", "10s", "5m", "1h"
	TypeList          // TOML array of strings or one comma-separated string
	TypeEnum          // one of Key.Allowed (case-insensitive)
	TypeClass         // a Kafka class name, or its short name, from Key.Allowed
)

func (t Type) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeInt:
		return "int"
	case TypeLong:
		return "long"
	case TypeBool:
		return "bool"
	case TypeDuration:
		return "duration"
	case TypeList:
		return "list"
	case TypeEnum:
		return "enum"
	case TypeClass:
		return "class"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// Disposition says what StoatFlow does with a key it knows.
type Disposition int

const (
	// Normal keys are applied.
	Normal Disposition = iota
	// Ignored keys are accepted with one notice each: they do not apply to a
	// single instance (or to StoatFlow's runtime); Reason says why.
	Ignored
	// Refused keys are errors whatever their value; Reason says why.
	Refused
	// Unsupported keys are errors "not supported yet"; Reason says what is missing.
	Unsupported
)

func (d Disposition) String() string {
	switch d {
	case Normal:
		return "normal"
	case Ignored:
		return "ignored"
	case Refused:
		return "refused"
	case Unsupported:
		return "not supported yet"
	}
	return fmt.Sprintf("Disposition(%d)", int(d))
}

// Role is a bit set of the Kafka clients a client property applies to.
type Role uint8

const (
	ForConsumer Role = 1 << iota
	ForProducer
	ForAdmin
	ForAll = ForConsumer | ForProducer | ForAdmin
)

func (r Role) String() string {
	switch r {
	case ForAll:
		return "all clients"
	case ForConsumer:
		return "consumer"
	case ForProducer:
		return "producer"
	case ForAdmin:
		return "admin"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// Key declares one configuration key.
type Key struct {
	Section Section
	Name    string
	Type    Type
	// Default is the value when the key is not set, written as in the file
	// ("" when there is none). DefaultEOS, when not empty, replaces it under
	// processing.guarantee = exactly_once_v2. DefaultDoc, when not empty, is
	// what the docs show instead of Default (for derived defaults).
	Default, DefaultEOS, DefaultDoc string
	Doc                             string
	// Allowed values of an enum or class key; the first spelling of a value is
	// its canonical form. Aliases maps other accepted spellings (Kafka class
	// names) to a canonical value.
	Allowed []string
	Aliases map[string]string
	// Refuse maps values that are errors to the reason (for example
	// processing.guarantee = exactly_once).
	Refuse map[string]string
	// Min is the smallest accepted number (duration in ms) for numeric keys. Max, when
	// not 0, is the largest, and MaxReason says why.
	Min, Max    int64
	MaxReason   string
	Disposition Disposition
	Reason      string
	// Deprecated, when not empty, says since when the key's name is deprecated and which key
	// replaces it; setting the key is a notice (KindDeprecated).
	Deprecated string
	// Client is non-zero for Kafka client properties: the clients the key applies
	// to. Client keys may also be written with a consumer., producer. or admin.
	// prefix, which wins over the unprefixed key, as in Kafka Streams.
	Client Role
	// Required keys have no default and must be set in a config file.
	Required bool
	// Path values are file paths, resolved relative to the config file's directory.
	Path bool
	// Secret values (passwords, tokens, credentials) are never shown back, nor anything
	// derived from them: not in an error, a log line, an HTTP answer or the docs. This mark
	// is the one place that says so; every redaction is derived from it (secret.go).
	Secret bool

	full string // FullName, once the key is declared
}

// FullName is the key with its section, as it is reported: "streams.commit.interval.ms".
func (k *Key) FullName() string {
	if k.full != "" {
		return k.full
	}
	return string(k.Section) + "." + k.Name
}

const (
	// maxInt32 bounds the keys Kafka declares as int: a 32-bit number (of milliseconds for
	// durations), as they travel in Kafka's protocol.
	maxInt32             = 1<<31 - 1
	reasonInt32          = "Kafka declares it as a 32-bit int"
	reasonSingleInstance = "applies to tasks spread over several instances; one StoatFlow agent runs every task, the others are standbys (docs/scaling.md)"
	reasonPrometheus     = "StoatFlow's metrics are Prometheus metrics, served at /metrics"
	reasonLevelDB        = "every StoatFlow store is LevelDB-backed"
)

// agentKeys are StoatFlow's own settings, for which Kafka Streams has no key.
var agentKeys = keyTable{section: SectionAgent}

var (
	scripts = declare[[]string](&agentKeys, Key{Name: "scripts", Type: TypeList, Required: true, Path: true,
		Doc: "Lua scripts that build the topology, resolved relative to the config file's directory; each must exist."})
	httpListen = declare[string](&agentKeys, Key{Name: "http.listen", Type: TypeString, Default: "127.0.0.1:9464",
		Doc: "Address of the HTTP server (health, metrics, topology, interactive queries)."})
	httpToken = declare[string](&agentKeys, Key{Name: "http.token", Type: TypeString, Secret: true,
		Doc: "Bearer token required on every HTTP request except /healthz, /readyz (and /metrics with http.metrics.unauthenticated); empty means none. Prefer http.token.file, which keeps the token out of the config file."})
	httpTokenFile = declare[string](&agentKeys, Key{Name: "http.token.file", Type: TypeString, Path: true,
		Doc: "File holding the bearer token (a Kubernetes Secret or a Docker secret mounted as a file): a regular file of at most 4 KiB, read when the config is loaded; surrounding white space and line ends are dropped. Set this or http.token, not both."})
	httpAllowUnauthenticated = declare[bool](&agentKeys, Key{Name: "http.allow.unauthenticated", Type: TypeBool, Default: "false",
		Doc: "Serve without a token on a listener beyond loopback (http.listen not 127.0.0.1, ::1 or localhost): every store, the tap, the status and the metrics then answer anyone who reaches the port. Without it, such a listener needs http.token.file or http.token. Either way, POST /v1/close and POST /-/reload without a token answer loopback callers only."})
	httpMetricsUnauthenticated = declare[bool](&agentKeys, Key{Name: "http.metrics.unauthenticated", Type: TypeBool, Default: "false",
		Doc: "Serve /metrics without the token, as /healthz and /readyz are, for scrapers that cannot send one (Prometheus' pod annotations); the metrics name topics, stores and nodes, never a record."})
	httpAllowedHosts = declare[[]string](&agentKeys, Key{Name: "http.allowed.hosts", Type: TypeList,
		Doc: "Host names the HTTP server answers to besides loopback names (localhost), IP addresses, the host of http.listen and of application.server, e.g. a Kubernetes service name; other Host headers are refused (DNS rebinding). Names only, no ports."})
	queryMaxConcurrency = declare[int64](&agentKeys, Key{Name: "http.query.max.concurrency", Type: TypeInt, Default: "4", Min: 1,
		Doc: "Interactive queries served at once; one more waits up to 1 s for its turn, then is answered 503 too_many_queries with Retry-After. Whatever this says, queries together use at most a quarter of the CPUs (GOMAXPROCS), so they cannot starve processing."})
	queryTimeout = declare[time.Duration](&agentKeys, Key{Name: "http.query.timeout", Type: TypeDuration, Default: "30s", Min: 1,
		Doc: "Deadline of one interactive query, from its turn; a query still running then ends with the error query_timeout."})
	tapRecordsPerSecond = declare[int64](&agentKeys, Key{Name: "http.tap.max.records.per.second", Type: TypeInt, Default: "100", Min: 1, Max: 100000,
		Doc: "Most records per second a live tap (GET /v1/tap/{node}, the console's tap, stoatflow tap) shows of one node; the others are counted as skipped. With nobody tapping, nothing is sampled."})
	tapMaxClients = declare[int64](&agentKeys, Key{Name: "http.tap.max.clients", Type: TypeInt, Default: "4", Min: 1, Max: 64,
		Doc: "Most live taps open at once; one more is refused with 503 too_many_taps."})
	httpTLSCert = declare[string](&agentKeys, Key{Name: "http.tls.cert", Type: TypeString, Path: true,
		Doc: "PEM certificate chain for HTTPS; set together with http.tls.key."})
	httpTLSKey = declare[string](&agentKeys, Key{Name: "http.tls.key", Type: TypeString, Path: true,
		Doc: "PEM private key (unencrypted) for HTTPS; set together with http.tls.cert."})
	logLevel = declare[string](&agentKeys, Key{Name: "log.level", Type: TypeEnum, Default: "info", Allowed: []string{"debug", "info", "warn", "error"},
		Doc: "Lowest level of log lines written."})
	logFormat = declare[string](&agentKeys, Key{Name: "log.format", Type: TypeEnum, Default: "text", Allowed: []string{"text", "json"},
		Doc: "Log line format (log/slog text or JSON handler)."})
	embeddedListen = declare[string](&agentKeys, Key{Name: "embedded.listen", Type: TypeString, Default: "127.0.0.1:0",
		Doc: `Address of the in-process Kafka-compatible broker used when bootstrap.servers = "embedded" (port 0 picks a free port).`})
	embeddedPartitions = declare[int64](&agentKeys, Key{Name: "embedded.partitions", Type: TypeInt, Default: "1", Min: 1, Max: 256,
		MaxReason: "the embedded broker is for trying; a Kafka cluster takes any partition count",
		Doc:       "Partitions of the topics the embedded broker creates."})
	embeddedDemo = declare[string](&agentKeys, Key{Name: "embedded.demo", Type: TypeEnum, Allowed: append([]string{""}, demo.Names()...),
		Doc: `Name of a demo feeder that writes the sample records of one example of scripts/ into the embedded broker (make run EXAMPLE=...); empty means none.`})
	luaCallTimeout = declare[time.Duration](&agentKeys, Key{Name: "lua.call.timeout", Type: TypeDuration, Default: "1s", Min: 1,
		Doc: "CPU-time budget of one call into Lua, what it forwards into downstream included; a call over budget fails the record."})
	luaMemoryMaxBytes = declare[int64](&agentKeys, Key{Name: "lua.memory.max.bytes", Type: TypeLong, Default: "268435456", Min: 1 << 20,
		Doc: "Memory budget of the scripts' Lua data (estimated); a library call that would build more, or data grown past it, fails the record (docs/operations.md)."})
	shutdownTimeout = declare[time.Duration](&agentKeys, Key{Name: "shutdown.timeout", Type: TypeDuration, Default: "30s", Min: 1,
		Doc: "How long a shutdown may take to finish the current epoch and close the clients."})
	leaveGroupOnClose = declare[bool](&agentKeys, Key{Name: "leave.group.on.close", Type: TypeBool, Default: "false",
		Doc: "Leave the consumer group on shutdown (Kafka Streams' CloseOptions.leaveGroup); with static membership the default keeps the partitions for a quick restart."})
)

var (
	handlerAliases = map[string]string{
		"org.apache.kafka.streams.errors.LogAndFailExceptionHandler":     "LogAndFail",
		"LogAndFailExceptionHandler":                                     "LogAndFail",
		"org.apache.kafka.streams.errors.LogAndContinueExceptionHandler": "LogAndContinue",
		"LogAndContinueExceptionHandler":                                 "LogAndContinue",
	}
	processingAliases = map[string]string{
		"org.apache.kafka.streams.errors.LogAndFailProcessingExceptionHandler":     "LogAndFail",
		"LogAndFailProcessingExceptionHandler":                                     "LogAndFail",
		"org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler": "LogAndContinue",
		"LogAndContinueProcessingExceptionHandler":                                 "LogAndContinue",
	}
	productionFail = map[string]string{
		"org.apache.kafka.streams.errors.DefaultProductionExceptionHandler": "LogAndFail",
		"DefaultProductionExceptionHandler":                                 "LogAndFail",
	}
	serdeAliases = map[string]string{
		"org.apache.kafka.common.serialization.Serdes$StringSerde":    "string",
		"org.apache.kafka.common.serialization.Serdes$ByteArraySerde": "bytes",
		"org.apache.kafka.common.serialization.Serdes$LongSerde":      "long",
		"org.apache.kafka.common.serialization.Serdes$IntegerSerde":   "integer",
		"org.apache.kafka.common.serialization.Serdes$DoubleSerde":    "double",
	}
	extractorAliases = map[string]string{
		"org.apache.kafka.streams.processor.FailOnInvalidTimestamp":             "FailOnInvalidTimestamp",
		"org.apache.kafka.streams.processor.LogAndSkipOnInvalidTimestamp":       "LogAndSkipOnInvalidTimestamp",
		"org.apache.kafka.streams.processor.UsePartitionTimeOnInvalidTimestamp": "UsePartitionTimeOnInvalidTimestamp",
		"org.apache.kafka.streams.processor.WallclockTimestampExtractor":        "WallclockTimestampExtractor",
	}
)

// streamsKeys are the Kafka Streams 4.4 properties (StreamsConfig) that are not
// client properties; client properties are in clientKeys.
var streamsKeys = keyTable{section: SectionStreams}

var (
	applicationID = declare[string](&streamsKeys, Key{Name: "application.id", Type: TypeString, Required: true,
		Doc: "Identifier of the application: the consumer group id and the prefix of internal topics, the state directory and client ids."})
	bootstrapServers = declare[[]string](&streamsKeys, Key{Name: "bootstrap.servers", Type: TypeList, Required: true,
		Doc: `Kafka brokers as host:port; "embedded" starts an in-process Kafka-compatible broker (development and demos).`})
	processingGuarantee = declare[string](&streamsKeys, Key{Name: "processing.guarantee", Type: TypeEnum, Default: "at_least_once", Allowed: []string{"at_least_once", "exactly_once_v2"},
		Refuse: map[string]string{
			"exactly_once":      "removed in Kafka Streams 4.0, use exactly_once_v2",
			"exactly_once_beta": "removed in Kafka Streams 4.0, use exactly_once_v2",
		},
		Doc: "at_least_once, or exactly_once_v2: outputs, changelogs and offsets in one Kafka transaction per commit."})
	commitInterval = declare[time.Duration](&streamsKeys, Key{Name: "commit.interval.ms", Type: TypeDuration, Default: "30000", DefaultEOS: "100",
		Doc: "How often the commit barrier closes an epoch (offsets, transaction, store batch); 0 = as often as possible, as in Kafka Streams: after every processed batch, and every poll.ms when idle."})
	stateDir = declare[string](&streamsKeys, Key{Name: "state.dir", Type: TypeString, Path: true, DefaultDoc: "${TMPDIR}/stoatflow",
		Doc: "Directory of the LevelDB state (state.dir/<application.id>/), relative to the config file's directory; Kafka Streams' default is ${java.io.tmpdir}/kafka-streams, StoatFlow's is the temporary directory's stoatflow/ (the systemd unit sets /var/lib/stoatflow)."})
	transactionalStateStores = declare[bool](&streamsKeys, Key{Name: "enable.transactional.statestores", Type: TypeBool, Default: "false",
		Doc: "KIP-892: buffer each epoch's store writes and apply them to LevelDB only after the commit, so a failure never wipes local state."})
	uncommittedMaxBytes = declare[int64](&streamsKeys, Key{Name: "statestore.uncommitted.max.bytes", Type: TypeLong, Default: "67108864", Min: -1,
		Doc: "KIP-892: buffered store writes beyond this many bytes trigger an early commit; -1 = unbounded."})
	defaultIQIsolation = declare[string](&streamsKeys, Key{Name: "default.interactive.query.isolation.level", Type: TypeEnum, Default: "READ_UNCOMMITTED",
		Allowed: []string{"READ_UNCOMMITTED", "READ_COMMITTED"},
		Doc:     "Isolation of interactive queries that do not name one: READ_UNCOMMITTED sees the epoch's buffered writes, READ_COMMITTED only committed state."})
	defaultKeySerde = declare[string](&streamsKeys, Key{Name: "default.key.serde", Type: TypeEnum, Default: "string", Aliases: serdeAliases, Allowed: serdes.Builtin(),
		Doc: "Key serde where the topology names none (Kafka Streams has no default; a Lua agent needs one). Kafka's Serdes class names are accepted."})
	defaultValueSerde = declare[string](&streamsKeys, Key{Name: "default.value.serde", Type: TypeEnum, Default: "string", Aliases: serdeAliases, Allowed: serdes.Builtin(),
		Doc: "Value serde where the topology names none. Kafka's Serdes class names are accepted."})
	defaultTimestampExtractor = declare[string](&streamsKeys, Key{Name: "default.timestamp.extractor", Type: TypeClass, Default: "FailOnInvalidTimestamp", Aliases: extractorAliases,
		Allowed: []string{"FailOnInvalidTimestamp", "LogAndSkipOnInvalidTimestamp", "UsePartitionTimeOnInvalidTimestamp", "WallclockTimestampExtractor"},
		Doc:     "Timestamp extractor where the topology names none (Kafka's class names or their short names)."})
	maxTaskIdle = declare[time.Duration](&streamsKeys, Key{Name: "max.task.idle.ms", Type: TypeDuration, Default: "0", Min: -1,
		Doc: "How long a partition at its log end may hold back the watermark before it counts as idle; -1 = never wait."})
	bufferedRecordsPerPartition = declare[int64](&streamsKeys, Key{Name: "buffered.records.per.partition", Type: TypeInt, Default: "1000", Min: 1, Max: 100000,
		MaxReason: "the consumer allocates buffers of this many records for every partition up front",
		Doc:       "Records buffered per input partition ahead of processing (the consumer's channel size)."})
	pollTime = declare[time.Duration](&streamsKeys, Key{Name: "poll.ms", Type: TypeDuration, Default: "100", Min: 1,
		Doc: "Longest wait for new records before the processing loop checks punctuation and, with commit.interval.ms = 0, commits."})
	taskTimeout = declare[time.Duration](&streamsKeys, Key{Name: "task.timeout.ms", Type: TypeDuration, Default: "300000",
		Doc: "How long a Kafka step (a flush, a commit) may keep failing with retriable errors beyond producer request.timeout.ms before the epoch fails; 0 = fail when one attempt times out."})
	topologyOptimization = declare[[]string](&streamsKeys, Key{Name: "topology.optimization", Type: TypeList, Default: "none",
		Allowed: []string{"none", "all", "reuse.ktable.source.topics", "merge.repartition.topics", "single.store.self.join"},
		Doc:     "none, all, or a list of reuse.ktable.source.topics, merge.repartition.topics, single.store.self.join."})
	applicationServer = declare[string](&streamsKeys, Key{Name: "application.server", Type: TypeString,
		Doc: "host:port of this agent's HTTP server as other clients reach it, returned by metadata queries (checked when the config is built, KIP-1245)."})
	replicationFactor = declare[int64](&streamsKeys, Key{Name: "replication.factor", Type: TypeInt, Default: "-1", Min: -1,
		Doc: "Replication factor of the changelog topics the agent creates; -1 = the broker default."})
	windowStoreChangelogAdditionalRetention = declare[time.Duration](&streamsKeys, Key{Name: "windowstore.changelog.additional.retention.ms", Type: TypeDuration, Default: "86400000",
		Doc: "Added to a window store's retention for its changelog topic's retention.ms."})
	numStreamThreads = declare[int64](&streamsKeys, Key{Name: "num.stream.threads", Type: TypeInt, Default: "1", Min: 1, Max: 64,
		MaxReason: "each worker holds a Lua state and a share of the record cache; more workers than cores only take turns",
		Doc:       "Workers (Kafka Streams' stream threads) that run the tasks, each with its own Lua state, the tasks spread evenly among them and kept where they are across rebalances; a reload may change it (docs/architecture.md). There is no `auto`: Kafka Streams has none, and the cores an agent should take are the operator's to say (the Kafka clients and LevelDB need some too)."})
	numStandbyReplicas = declare[int64](&streamsKeys, Key{Name: "num.standby.replicas", Type: TypeInt, Default: "1", Min: 0, Max: 1000,
		MaxReason: "each warm standby is an agent of the application reading every changelog",
		Doc:       "How many standby agents of the application keep warm state (follow the changelogs into their state.dir) so that a takeover replays only the tail; the other standbys stay cold and restore when they take over. Kafka Streams' default is 0; StoatFlow's is 1 (docs/scaling.md says why). Ignored with group.protocol = \"streams\", as Kafka Streams ignores it: the group's streams.num.standby.replicas, set on the brokers, says how many standby tasks the broker places."})
	dslStoreFormat = declare[string](&streamsKeys, Key{Name: "dsl.store.format", Type: TypeEnum, Default: "DEFAULT", Allowed: []string{"DEFAULT", "HEADERS"},
		Doc: "KIP-1285: HEADERS makes DSL stores headers-aware (record headers kept with the value)."})
	groupProtocol = declare[string](&streamsKeys, Key{Name: "group.protocol", Type: TypeEnum, Default: "classic", Allowed: []string{"classic", "streams"},
		Refuse: map[string]string{
			"consumer": "Kafka Streams' consumer uses the classic group protocol; the consumer protocol (KIP-848) is not supported",
		},
		Doc: "How the agents of an application share it (docs/scaling.md): classic, a consumer group where one agent is active and the others are standbys (the default, and the only mode the embedded broker has), or streams, a Kafka streams group (KIP-1071, Apache Kafka 4.1 or later) where the broker spreads the tasks over the agents, each agent runs the active tasks it is given and answers interactive queries of their store partitions, redirecting reads of the others to the agent that runs them (docs/queries.md), and keeps the standby and warmup tasks it is given caught up from their changelogs."})
	deserializationHandler = declare[string](&streamsKeys, Key{Name: "deserialization.exception.handler", Type: TypeClass, Default: "LogAndFail",
		Allowed: []string{"LogAndFail", "LogAndContinue"}, Aliases: handlerAliases,
		Doc: "What a record that cannot be deserialized does: LogAndFail stops the agent, LogAndContinue logs, counts and skips it."})
	defaultDeserializationHandler = declare[string](&streamsKeys, Key{Name: "default.deserialization.exception.handler", Type: TypeClass, Default: "LogAndFail",
		Allowed: []string{"LogAndFail", "LogAndContinue"}, Aliases: handlerAliases,
		Deprecated: "since Kafka 4.0; use deserialization.exception.handler",
		Doc:        "Deprecated name (since Kafka 4.0) of deserialization.exception.handler, used when that key is not set."})
	processingHandler = declare[string](&streamsKeys, Key{Name: "processing.exception.handler", Type: TypeClass, Default: "LogAndFail",
		Allowed: []string{"LogAndFail", "LogAndContinue"}, Aliases: processingAliases,
		Doc: "What a processing error (a failing Lua callback, a store write whose changelog record would be larger than producer.max.request.size) does: LogAndFail stops the agent, LogAndContinue logs, counts and skips the record (KIP-1033). An error the callback got from the agent (a send refused below ctx:forward, a store's error) keeps its own kind: a refused send is the production handler's, a fenced producer or damaged state is never skipped."})
	productionHandler = declare[string](&streamsKeys, Key{Name: "production.exception.handler", Type: TypeClass, Default: "LogAndFail",
		Allowed: []string{"LogAndFail", "LogAndContinue"}, Aliases: productionFail,
		Doc: "What an output record refused for good does: LogAndFail (Kafka's DefaultProductionExceptionHandler) stops the agent, LogAndContinue logs, counts and skips it. Under exactly_once_v2 LogAndContinue skips only records refused before they are sent (larger than max.request.size): a record the broker refuses has made the transaction abortable, so the agent stops. Retriable errors are retried."})
	defaultProductionHandler = declare[string](&streamsKeys, Key{Name: "default.production.exception.handler", Type: TypeClass, Default: "LogAndFail",
		Allowed: []string{"LogAndFail", "LogAndContinue"}, Aliases: productionFail,
		Deprecated: "since Kafka 4.0; use production.exception.handler",
		Doc:        "Deprecated name (since Kafka 4.0) of production.exception.handler."})
	deadLetterQueueTopic = declare[string](&streamsKeys, Key{Name: "errors.dead.letter.queue.topic.name", Type: TypeString,
		Doc: "KIP-1034: topic that receives every record the deserialization or processing handler skips or fails on, and the consumed record behind each output the production handler skips, with its original key and value bytes, its headers and then the __streams.errors.* headers (Kafka 4.2's format; message and stacktrace cut to 8192 bytes each); empty means none. A dead letter larger than producer.max.request.size has its key and value cut to fit and a __stoatflow.errors.truncated header with their sizes; one that cannot fit even then is dropped and counted (reason dead-letter). Created by the agent with the embedded broker only."})

	_ = streamsKeys.add(Key{Name: "acceptable.recovery.lag", Type: TypeLong, Default: "10000", Disposition: Ignored,
		Reason: reasonSingleInstance, Doc: "Lag under which an instance counts as caught up for a task."})
	_ = streamsKeys.add(Key{Name: "max.warmup.replicas", Type: TypeInt, Default: "2", Disposition: Ignored,
		Reason: reasonSingleInstance, Doc: "Warm-up replicas assigned at once."})
	_ = streamsKeys.add(Key{Name: "probing.rebalance.interval.ms", Type: TypeDuration, Default: "600000", Disposition: Ignored,
		Reason: reasonSingleInstance, Doc: "Interval of probing rebalances while warm-up replicas catch up."})
	_ = streamsKeys.add(Key{Name: "upgrade.from", Type: TypeString, Disposition: Ignored,
		Reason: "rolling upgrades of several instances do not apply to one instance", Doc: "Version a rolling upgrade starts from."})
	_ = streamsKeys.add(Key{Name: "topology.description.push.enabled", Type: TypeBool, Disposition: Ignored,
		Reason: reasonSingleInstance + "; the topology is served at /topology", Doc: "Push the topology description to the group coordinator."})
	_ = streamsKeys.add(Key{Name: "rack.aware.assignment.tags", Type: TypeList, Disposition: Ignored,
		Reason: reasonSingleInstance, Doc: "Client tags used to spread standby replicas."})
	_ = streamsKeys.add(Key{Name: "rack.aware.assignment.strategy", Type: TypeString, Disposition: Ignored,
		Reason: reasonSingleInstance, Doc: "Rack-aware task assignment strategy."})
	_ = streamsKeys.add(Key{Name: "rack.aware.assignment.traffic_cost", Type: TypeInt, Disposition: Ignored,
		Reason: reasonSingleInstance, Doc: "Cost of cross-rack traffic in rack-aware assignment."})
	_ = streamsKeys.add(Key{Name: "rack.aware.assignment.non_overlap_cost", Type: TypeInt, Disposition: Ignored,
		Reason: reasonSingleInstance, Doc: "Cost of moving tasks in rack-aware assignment."})
	_ = streamsKeys.add(Key{Name: "task.assignor.class", Type: TypeString, Disposition: Ignored,
		Reason: reasonSingleInstance, Doc: "Custom task assignor."})
	_ = streamsKeys.add(Key{Name: "state.cleanup.delay.ms", Type: TypeDuration, Default: "600000", Disposition: Ignored,
		Reason: "tasks never migrate away from a single instance, so there is no stale state to clean", Doc: "Delay before deleting the state of migrated tasks."})
	_ = streamsKeys.add(Key{Name: "repartition.purge.interval.ms", Type: TypeDuration, Default: "30000", Disposition: Ignored,
		Reason: "StoatFlow repartitions in memory: there are no repartition topics to purge", Doc: "How often consumed repartition records are deleted."})
	cacheMaxBytes = declare[int64](&streamsKeys, Key{Name: "statestore.cache.max.bytes", Type: TypeLong, Default: "10485760",
		Doc: "Size of the record cache in front of the DSL's materialized stores: between commits a key's updates collapse into one forwarded update (0 forwards every update)."})
	cacheMaxBytesBuffering = declare[int64](&streamsKeys, Key{Name: "cache.max.bytes.buffering", Type: TypeLong, Default: "10485760",
		Deprecated: "since Kafka 3.4; use statestore.cache.max.bytes",
		Doc:        "Deprecated name of statestore.cache.max.bytes (used when that key is not set)."})
	_ = streamsKeys.add(Key{Name: "default.dsl.store", Type: TypeString, Default: "rocksDB", Disposition: Ignored,
		Reason: reasonLevelDB, Doc: "Store type of DSL operators (deprecated)."})
	_ = streamsKeys.add(Key{Name: "dsl.store.suppliers.class", Type: TypeString, Disposition: Ignored,
		Reason: reasonLevelDB, Doc: "Store suppliers of DSL operators."})
	_ = streamsKeys.add(Key{Name: "rocksdb.config.setter", Type: TypeString, Disposition: Ignored,
		Reason: reasonLevelDB, Doc: "RocksDB options setter class."})
	_ = streamsKeys.add(Key{Name: "log.summary.interval.ms", Type: TypeDuration, Default: "120000", Disposition: Ignored,
		Reason: "StoatFlow reports progress through its metrics, not a periodic log summary", Doc: "Interval of the processing summary log line."})
	_ = streamsKeys.add(Key{Name: "built.in.metrics.version", Type: TypeString, Default: "latest", Disposition: Ignored,
		Reason: reasonPrometheus, Doc: "Version of the built-in JMX metrics."})
	_ = streamsKeys.add(Key{Name: "metrics.recording.level", Type: TypeString, Default: "INFO", Disposition: Ignored,
		Reason: reasonPrometheus, Doc: "Recording level of JMX metrics."})
	_ = streamsKeys.add(Key{Name: "metrics.num.samples", Type: TypeInt, Default: "2", Disposition: Ignored,
		Reason: reasonPrometheus, Doc: "Samples kept per JMX metric."})
	_ = streamsKeys.add(Key{Name: "metrics.sample.window.ms", Type: TypeDuration, Default: "30000", Disposition: Ignored,
		Reason: reasonPrometheus, Doc: "Window of a JMX metric sample."})
	_ = streamsKeys.add(Key{Name: "metric.reporters", Type: TypeList, Disposition: Ignored,
		Reason: reasonPrometheus, Doc: "JMX metric reporter classes."})
	_ = streamsKeys.add(Key{Name: "enable.metrics.push", Type: TypeBool, Default: "true", Disposition: Ignored,
		Reason: reasonPrometheus, Doc: "Push client metrics to the broker (KIP-714)."})
	windowSize = declare[time.Duration](&streamsKeys, Key{Name: "window.size.ms", Type: TypeDuration, Min: 1,
		Doc: "Window size of the time-windowed serdes named in scripts (\"windowed-string\" and friends) that do not give one (TimeWindowedDeserializer's window.size.ms); without either, reading such a key fails."})
	_ = streamsKeys.add(Key{Name: "windowed.inner.class.serde", Type: TypeString, Disposition: Ignored,
		Reason: "a windowed serde's name carries its inner serde (\"windowed-string\")", Doc: "Inner serde for Java's windowed serde."})
	_ = streamsKeys.add(Key{Name: "default.client.supplier", Type: TypeString, Disposition: Refused,
		Reason: "a Java class; StoatFlow's Kafka clients are sarama clients configured by the client properties", Doc: "Java KafkaClientSupplier class."})
	_ = streamsKeys.add(Key{Name: "processor.wrapper.class", Type: TypeString, Disposition: Unsupported,
		Reason: "processor wrappers (KIP-1112)", Doc: "Java processor wrapper class."})
	_ = streamsKeys.add(Key{Name: "ensure.explicit.internal.resource.naming", Type: TypeBool, Disposition: Unsupported,
		Reason: "enforcing explicit names of internal topics and stores (KIP-1111)", Doc: "Fail when an internal topic or store is auto-named."})
)
