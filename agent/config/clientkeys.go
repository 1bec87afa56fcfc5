package config

import "time"

// clientPrefixes are the Kafka Streams prefixes that aim a client property at
// one client, most specific first: main.consumer. wins over consumer., which
// wins over the unprefixed key.
var clientPrefixes = []struct {
	prefix string
	role   Role
}{
	{"main.consumer.", ForConsumer},
	{"consumer.", ForConsumer},
	{"producer.", ForProducer},
	{"admin.", ForAdmin},
}

// unsupportedPrefixes are Kafka Streams prefixes for clients or topics StoatFlow
// does not configure separately.
var unsupportedPrefixes = map[string]string{
	"restore.consumer.": "a separate restore consumer (the main consumer restores changelogs)",
	"global.consumer.":  "a separate global consumer (the main consumer reads global tables)",
	"topic.":            "internal topic configs (topic. prefix)",
	"client.tag.":       "client tags (they only steer multi-instance assignment)",
}

const reasonForcedSerde = "serialization is chosen per topic in the topology and by default.key.serde / default.value.serde"

// clientKeys are the Kafka client properties StoatFlow knows, written under
// [streams] unprefixed (every client the key applies to) or with a prefix.
// Their defaults are Kafka's, as Kafka Streams sets them, unless the doc says
// otherwise; agent/kafkaio maps them onto sarama.
var clientKeys = keyTable{section: SectionStreams}

// The handles of the client properties agent/kafkaio reads, each read per client.
var (
	ClientID = declareClient[string](&clientKeys, Key{Name: "client.id", Type: TypeString, Client: ForAll, DefaultDoc: "application.id",
		Doc: "Client id prefix; each client adds -consumer, -producer or -admin unless its own prefixed client.id is set."})
	RequestTimeout = declareClient[time.Duration](&clientKeys, Key{Name: "request.timeout.ms", Type: TypeDuration, Default: "30000", Min: 1, Max: maxInt32, MaxReason: reasonInt32, Client: ForAll,
		Doc: "How long a request may wait for its response (sarama Net.ReadTimeout; also the produce request timeout and the admin operation timeout)."})
	RetryBackoff = declareClient[time.Duration](&clientKeys, Key{Name: "retry.backoff.ms", Type: TypeDuration, Default: "100", Client: ForAll,
		Doc: "Wait before retrying a failed request (sarama's metadata, producer, consumer and admin retry backoffs)."})
	MetadataMaxAge = declareClient[time.Duration](&clientKeys, Key{Name: "metadata.max.age.ms", Type: TypeDuration, Default: "300000", Client: ForAll,
		Doc: "How often cluster metadata is refreshed (sarama Metadata.RefreshFrequency)."})
	bootstrapResolveTimeout = declareClient[time.Duration](&clientKeys, Key{Name: "bootstrap.resolve.timeout.ms", Type: TypeDuration, Default: "0", Client: ForAll,
		Doc: "KIP-909's asynchronous resolution of bootstrap.servers: Kafka Streams forces it to 0 (resolve once, at start) for every client it creates (KAFKA-20939), and so does StoatFlow; a positive value is ignored with a warning."})
	SocketConnectionSetupTimeout = declareClient[time.Duration](&clientKeys, Key{Name: "socket.connection.setup.timeout.ms", Type: TypeDuration, Default: "10000", Min: 1, Client: ForAll,
		Doc: "How long opening a connection to a broker may take (sarama Net.DialTimeout)."})
	ClientRack = declareClient[string](&clientKeys, Key{Name: "client.rack", Type: TypeString, Client: ForAll,
		Doc: "Rack of this client, for fetching from the closest replica (sarama RackID)."})
	SecurityProtocol = declareClient[string](&clientKeys, Key{Name: "security.protocol", Type: TypeEnum, Default: "PLAINTEXT", Client: ForAll,
		Allowed: []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"},
		Doc:     "How clients talk to brokers: TLS (SSL, SASL_SSL) and SASL authentication (SASL_PLAINTEXT, SASL_SSL)."})
	SASLMechanism = declareClient[string](&clientKeys, Key{Name: "sasl.mechanism", Type: TypeEnum, Default: "GSSAPI", Client: ForAll,
		Allowed: []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER"},
		Doc:     "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (GSSAPI, Kafka's default, and OAUTHBEARER are not supported yet)."})
	SASLJAASConfig = declareClient[string](&clientKeys, Key{Name: "sasl.jaas.config", Type: TypeString, Secret: true, Client: ForAll,
		Doc: `Credentials, as in Kafka: org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p"; (ScramLoginModule for SCRAM).`})
	SSLTruststoreLocation = declareClient[string](&clientKeys, Key{Name: "ssl.truststore.location", Type: TypeString, Path: true, Client: ForAll,
		Doc: "PEM file of the CA certificates that sign the brokers' certificates; unset = the system roots."})
	_ = clientKeys.add(Key{Name: "ssl.truststore.type", Type: TypeEnum, Default: "PEM", Client: ForAll, Allowed: []string{"PEM"},
		Refuse: map[string]string{
			"JKS":    "StoatFlow reads PEM files only (JKS is a Java keystore format); convert it with keytool -exportcert -rfc",
			"PKCS12": "StoatFlow reads PEM files only; convert it with openssl pkcs12 -nokeys",
		},
		Doc: "Format of the truststore: PEM (Kafka's default, JKS, is a Java format)."})
	SSLKeystoreLocation = declareClient[string](&clientKeys, Key{Name: "ssl.keystore.location", Type: TypeString, Path: true, Client: ForAll,
		Doc: "PEM file holding the client certificate chain and its unencrypted private key, for TLS client authentication."})
	_ = clientKeys.add(Key{Name: "ssl.keystore.type", Type: TypeEnum, Default: "PEM", Client: ForAll, Allowed: []string{"PEM"},
		Refuse: map[string]string{
			"JKS":    "StoatFlow reads PEM files only (JKS is a Java keystore format); convert it to PEM (keytool -importkeystore to PKCS12, then openssl pkcs12 -nodes)",
			"PKCS12": "StoatFlow reads PEM files only; convert it with openssl pkcs12 -nodes",
		},
		Doc: "Format of the keystore: PEM (certificate chain and unencrypted key in one file)."})
	_ = clientKeys.add(Key{Name: "ssl.key.password", Type: TypeString, Secret: true, Client: ForAll, Disposition: Unsupported,
		Reason: "encrypted private keys (decrypt the key into the PEM keystore)", Doc: "Password of an encrypted private key."})
	_ = clientKeys.add(Key{Name: "ssl.truststore.password", Type: TypeString, Secret: true, Client: ForAll, Disposition: Unsupported,
		Reason: "store passwords (PEM truststores have none)", Doc: "Password of the truststore."})
	_ = clientKeys.add(Key{Name: "ssl.keystore.password", Type: TypeString, Secret: true, Client: ForAll, Disposition: Unsupported,
		Reason: "store passwords (PEM keystores have none)", Doc: "Password of the keystore."})
	SSLEndpointIdentificationAlgorithm = declareClient[string](&clientKeys, Key{Name: "ssl.endpoint.identification.algorithm", Type: TypeEnum, Default: "https", Client: ForAll, Allowed: []string{"https", ""},
		Doc: `"https" checks that a broker's certificate names its host; "" disables the check.`})

	groupInstanceID = declareClient[string](&clientKeys, Key{Name: "group.instance.id", Type: TypeString, Client: ForConsumer, DefaultDoc: "<application.id>-<hostname>",
		Doc: "Static group membership: a restarted agent takes its partitions back at once, a second one with the same id is fenced. In a streams group (group.protocol = \"streams\") only an id written here makes the member static, as in Kafka Streams, and names the transactional producer (<application.id>-<group.instance.id>); without one the producer is named after the process id the agent keeps in state.dir (<application.id>-<processId>-1, as Kafka Streams), so agents sharing a host need no id of their own."})
	SessionTimeout = declareClient[time.Duration](&clientKeys, Key{Name: "session.timeout.ms", Type: TypeDuration, Default: "45000", Min: 1, Max: maxInt32, MaxReason: reasonInt32, Client: ForConsumer,
		Doc: "How long the group coordinator waits for a heartbeat before it removes the agent from the group."})
	HeartbeatInterval = declareClient[time.Duration](&clientKeys, Key{Name: "heartbeat.interval.ms", Type: TypeDuration, Default: "3000", Min: 1, Max: maxInt32, MaxReason: reasonInt32, Client: ForConsumer,
		Doc: "Interval of group heartbeats; below session.timeout.ms."})
	MaxPollInterval = declareClient[time.Duration](&clientKeys, Key{Name: "max.poll.interval.ms", Type: TypeDuration, Default: "300000", Min: 1, Max: maxInt32, MaxReason: reasonInt32, Client: ForConsumer,
		Doc: "Rebalance timeout: how long the group waits for the agent to rejoin during a rebalance (sarama Group.Rebalance.Timeout)."})
	MaxPollRecords = declareClient[int64](&clientKeys, Key{Name: "max.poll.records", Type: TypeInt, Default: "1000", Min: 1, Client: ForConsumer,
		Doc: "Most records the processing loop takes from the consumer at once, all of one partition (Kafka Streams' default 1000)."})
	FetchMinBytes = declareClient[int64](&clientKeys, Key{Name: "fetch.min.bytes", Type: TypeInt, Default: "1", Min: 1, Client: ForConsumer,
		Doc: "Bytes a fetch waits for before the broker answers."})
	FetchMaxBytes = declareClient[int64](&clientKeys, Key{Name: "fetch.max.bytes", Type: TypeInt, Default: "52428800", Min: 1, Client: ForConsumer,
		Doc: "Most bytes one fetch returns across partitions."})
	FetchMaxWait = declareClient[time.Duration](&clientKeys, Key{Name: "fetch.max.wait.ms", Type: TypeDuration, Default: "500", Min: 1, Max: maxInt32, MaxReason: reasonInt32, Client: ForConsumer,
		Doc: "Longest time the broker holds a fetch waiting for fetch.min.bytes."})
	MaxPartitionFetchBytes = declareClient[int64](&clientKeys, Key{Name: "max.partition.fetch.bytes", Type: TypeInt, Default: "1048576", Min: 1, Client: ForConsumer,
		Doc: "Bytes fetched per partition per request (sarama Consumer.Fetch.Default)."})
	AutoOffsetReset = declareClient[string](&clientKeys, Key{Name: "auto.offset.reset", Type: TypeString, Default: "earliest", Client: ForConsumer,
		Doc: "Where a source partition without a committed offset starts, unless its source names its own (offsetReset): earliest (Kafka Streams' default), latest, none (the application stops, naming the topic) or by_duration:<ISO-8601 duration>, e.g. by_duration:PT1H, the first record of the last hour (KIP-1106)."})
	IsolationLevel = declareClient[string](&clientKeys, Key{Name: "isolation.level", Type: TypeEnum, Default: "read_uncommitted", DefaultEOS: "read_committed", Client: ForConsumer,
		Allowed: []string{"read_uncommitted", "read_committed"},
		Doc:     "Which records the consumer sees; Kafka Streams forces read_committed under exactly_once_v2."})
	_ = clientKeys.add(Key{Name: "enable.auto.commit", Type: TypeBool, Default: "false", Client: ForConsumer,
		Refuse: map[string]string{"true": "Kafka Streams forces enable.auto.commit = false: the agent commits offsets with its commit barrier"},
		Doc:    "Always false: offsets are committed by the commit barrier."})

	Linger = declareClient[time.Duration](&clientKeys, Key{Name: "linger.ms", Type: TypeDuration, Default: "5", DefaultEOS: "0", Max: 5000, Client: ForProducer,
		MaxReason: "an at-least-once commit barrier waits up to linger.ms for the last batch",
		Doc:       "How long the producer gathers records into a partition's batch (sarama Flush.Frequency). StoatFlow's defaults differ from Kafka Streams' 100: see the note below the table."})
	BatchSize = declareClient[int64](&clientKeys, Key{Name: "batch.size", Type: TypeInt, Default: "262144", Client: ForProducer,
		Doc: "Bytes of a partition's batch that send it before linger.ms is up (sarama Flush.Bytes); unused when linger.ms is 0. A batch grows up to max.request.size either way."})
	CompressionType = declareClient[string](&clientKeys, Key{Name: "compression.type", Type: TypeEnum, Default: "none", Client: ForProducer,
		Allowed: []string{"none", "gzip", "snappy", "lz4", "zstd"},
		Doc:     "Compression of produced batches."})
	Acks = declareClient[string](&clientKeys, Key{Name: "acks", Type: TypeEnum, Default: "all", Client: ForProducer, Allowed: []string{"all", "1", "0"},
		Aliases: map[string]string{"-1": "all"},
		Doc:     "Acknowledgements a produce waits for; exactly_once_v2 and enable.idempotence need all."})
	MaxRequestSize = declareClient[int64](&clientKeys, Key{Name: "max.request.size", Type: TypeInt, Default: "1048576", Min: 1, Max: 100 << 20, MaxReason: "sarama sends no request larger than 100 MiB", Client: ForProducer,
		Doc: "Largest produce request, and so record batch, the producer sends (sarama Producer.MaxMessageBytes); a larger record is refused before it is sent."})
	Retries = declareClient[int64](&clientKeys, Key{Name: "retries", Type: TypeInt, Default: "2147483647", Max: maxInt32, MaxReason: reasonInt32, Client: ForProducer,
		Doc: "Retries of a failed produce batch, retry.backoff.ms apart; delivery.timeout.ms bounds them too."})
	DeliveryTimeout = declareClient[time.Duration](&clientKeys, Key{Name: "delivery.timeout.ms", Type: TypeDuration, Default: "120000", DefaultEOS: "2147483647", Min: 1, Max: maxInt32, MaxReason: reasonInt32, Client: ForProducer,
		Doc: "How long after its batch was created a record fails (a retriable timeout error) unless the broker acknowledged it: waiting for buffer room is not counted, lingering, waiting to be sent, between retries and in flight are (a request in flight is settled when it returns, within request.timeout.ms), as in Java's producer."})
	BufferMemory = declareClient[int64](&clientKeys, Key{Name: "buffer.memory", Type: TypeInt, Default: "33554432", Min: 1, Max: 1 << 40, MaxReason: "a bound of the producer's memory; 1 TiB is more than any agent holds", Client: ForProducer,
		Doc: "Bytes of records sent and not yet acknowledged or failed (each counts its size and 256 B of bookkeeping) at which Send waits for room, at most max.block.ms."})
	MaxBlock = declareClient[time.Duration](&clientKeys, Key{Name: "max.block.ms", Type: TypeDuration, Default: "60000", Min: 1, Max: maxInt32, MaxReason: reasonInt32, Client: ForProducer,
		Doc: "Longest a send waits for buffer room (buffer.memory), and a record for its topic's partition count; then it fails with a retriable timeout error naming the topic, and the epoch is processed again."})
	TransactionTimeout = declareClient[time.Duration](&clientKeys, Key{Name: "transaction.timeout.ms", Type: TypeDuration, Default: "60000", DefaultEOS: "10000", Min: 1, Max: maxInt32, MaxReason: reasonInt32, Client: ForProducer,
		Doc: "How long a transaction may stay open before the broker aborts it (Kafka Streams sets 10000 under exactly_once_v2)."})
	EnableIdempotence = declareClient[bool](&clientKeys, Key{Name: "enable.idempotence", Type: TypeBool, Default: "true", Client: ForProducer,
		Doc: "Idempotent producer (forced under exactly_once_v2; off by itself when acks is not all, as in Kafka)."})
	MaxInFlightRequestsPerConnection = declareClient[int64](&clientKeys, Key{Name: "max.in.flight.requests.per.connection", Type: TypeInt, Default: "5", Min: 1, Max: 1000, MaxReason: "sarama allocates a queue of this many responses for every broker connection", Client: ForProducer,
		Doc: "Requests in flight per broker connection (sarama Net.MaxOpenRequests) for the producer's metadata and transaction requests; its produce requests go one at a time per broker whatever this says, see the note below the table."})

	_ = clientKeys.add(Key{Name: "group.id", Type: TypeString, Client: ForConsumer, Disposition: Refused,
		Reason: "Kafka Streams uses application.id as the group id", Doc: "Consumer group id."})
	_ = clientKeys.add(Key{Name: "transactional.id", Type: TypeString, Client: ForProducer, Disposition: Refused,
		Reason: "Kafka Streams derives the transactional id from application.id", Doc: "Transactional id."})
	_ = clientKeys.add(Key{Name: "key.deserializer", Type: TypeString, Client: ForConsumer, Disposition: Refused, Reason: reasonForcedSerde, Doc: "Key deserializer class."})
	_ = clientKeys.add(Key{Name: "value.deserializer", Type: TypeString, Client: ForConsumer, Disposition: Refused, Reason: reasonForcedSerde, Doc: "Value deserializer class."})
	_ = clientKeys.add(Key{Name: "key.serializer", Type: TypeString, Client: ForProducer, Disposition: Refused, Reason: reasonForcedSerde, Doc: "Key serializer class."})
	_ = clientKeys.add(Key{Name: "value.serializer", Type: TypeString, Client: ForProducer, Disposition: Refused, Reason: reasonForcedSerde, Doc: "Value serializer class."})
	_ = clientKeys.add(Key{Name: "partition.assignment.strategy", Type: TypeList, Client: ForConsumer, Disposition: Refused,
		Reason: "Kafka Streams assigns partitions itself", Doc: "Partition assignors."})
	_ = clientKeys.add(Key{Name: "auto.commit.interval.ms", Type: TypeDuration, Client: ForConsumer, Disposition: Ignored,
		Reason: "enable.auto.commit is always false", Doc: "Auto-commit interval."})
)

// unmappedClientKeys are real Kafka client properties StoatFlow does not map
// onto sarama yet: setting one is an error "not supported yet".
var unmappedClientKeys = []string{
	"allow.auto.create.topics", "auto.include.jmx.reporter", "check.crcs",
	"client.dns.lookup", "compression.gzip.level", "compression.lz4.level", "compression.zstd.level",
	"connections.max.idle.ms", "default.api.timeout.ms", "exclude.internal.topics",
	"group.remote.assignor", "interceptor.classes", "metadata.max.idle.ms",
	"metadata.recovery.strategy", "partitioner.adaptive.partitioning.enable",
	"partitioner.availability.timeout.ms", "partitioner.class", "partitioner.ignore.keys",
	"receive.buffer.bytes", "reconnect.backoff.max.ms", "reconnect.backoff.ms", "retry.backoff.max.ms",
	"sasl.client.callback.handler.class", "sasl.kerberos.kinit.cmd", "sasl.kerberos.min.time.before.relogin",
	"sasl.kerberos.service.name", "sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.ticket.renew.window.factor",
	"sasl.login.callback.handler.class", "sasl.login.class", "sasl.login.connect.timeout.ms",
	"sasl.login.read.timeout.ms", "sasl.login.refresh.buffer.seconds", "sasl.login.refresh.min.period.seconds",
	"sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter", "sasl.login.retry.backoff.max.ms",
	"sasl.login.retry.backoff.ms", "sasl.oauthbearer.clock.skew.seconds", "sasl.oauthbearer.expected.audience",
	"sasl.oauthbearer.expected.issuer", "sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.scope.claim.name",
	"sasl.oauthbearer.sub.claim.name", "sasl.oauthbearer.token.endpoint.url", "security.providers",
	"send.buffer.bytes", "socket.connection.setup.timeout.max.ms", "ssl.cipher.suites", "ssl.enabled.protocols",
	"ssl.engine.factory.class", "ssl.keymanager.algorithm", "ssl.keystore.certificate.chain", "ssl.keystore.key",
	"ssl.protocol", "ssl.provider", "ssl.secure.random.implementation", "ssl.trustmanager.algorithm",
	"ssl.truststore.certificates", "transaction.two.phase.commit.enable",
}
