package config

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/stoatflow/stoatflow/luart/suggest"
	"github.com/stoatflow/stoatflow/pipeline"
)

// builder collects the values of a file and turns them into a Config,
// gathering every problem on the way.
type builder struct {
	dir     string
	partial bool // Default(): no required keys, no file checks
	cfg     *Config
	lines   map[string]int // canonical full name → line
	errs    []Problem
}

func newBuilder(dir string) *builder {
	return &builder{dir: dir, cfg: &Config{Dir: dir, set: map[string]any{}, written: map[string]any{}}, lines: map[string]int{}}
}

// report records a problem by its kind: a notice goes with the config, any other
// problem makes the file unusable.
func (b *builder) report(p Problem) {
	if p.Kind.Notice() {
		b.cfg.Notices = append(b.cfg.Notices, p)
		return
	}
	b.errs = append(b.errs, p)
}

// fail reports a problem of a key once, at the key's line.
func (b *builder) fail(kind Kind, key, format string, args ...any) {
	p := Problem{Kind: kind, Key: key, Message: fmt.Sprintf(format, args...), Line: b.lines[key]}
	for _, have := range append(b.errs[:len(b.errs):len(b.errs)], b.cfg.Notices...) {
		if have.Key == p.Key && have.Message == p.Message {
			return
		}
	}
	b.report(p)
}

// apply checks one entry of the file and records its value.
func (b *builder) apply(e entry) {
	k, prefix, kind, msg := lookup(e.section, e.name)
	if k == nil {
		key := e.full()
		if key == "" {
			// TOML's empty key, `"" = 1`: named as the file spells it, so the line says which.
			key = `""`
		}
		b.report(Problem{Kind: kind, Key: key, Message: msg, Line: e.line})
		return
	}
	canon := string(k.Section) + "." + prefix + k.Name
	if first, dup := b.lines[canon]; dup {
		b.report(Problem{Kind: KindDuplicate, Key: e.full(), Message: fmt.Sprintf("set twice (first at line %d)", first), Line: e.line})
		return
	}
	b.lines[canon] = e.line
	b.cfg.written[canon] = e.raw
	switch k.Disposition {
	case Refused:
		b.fail(KindRefused, canon, "refused: %s", k.Reason)
		return
	case Unsupported:
		b.fail(KindUnsupported, canon, "not supported yet: %s", k.Reason)
		return
	}
	v, err := convert(k, e.raw, e.text)
	if err != nil {
		b.fail(kindOf(err), canon, "%v", err)
		return
	}
	if k.Disposition == Ignored {
		b.report(Problem{Kind: KindIgnored, Key: canon, Message: "ignored: " + k.Reason, Line: e.line})
		return
	}
	if k.Deprecated != "" {
		b.report(Problem{Kind: KindDeprecated, Key: canon, Message: "deprecated " + k.Deprecated, Line: e.line})
	}
	if k.Path {
		v = b.resolvePaths(v)
	}
	b.cfg.set[canon] = v
}

func (b *builder) resolvePaths(v any) any {
	switch p := v.(type) {
	case string:
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(b.dir, p)
	case []string:
		out := make([]string, len(p))
		for i, s := range p {
			out[i] = b.resolvePaths(s).(string)
		}
		return out
	}
	return v
}

// build fills the Config from the collected values and runs the checks that
// involve several keys or the file system.
func (b *builder) build() *Config {
	c := b.cfg
	// The guarantee decides other defaults, so it is read first.
	c.ProcessingGuarantee = processingGuarantee.Get(c)

	b.buildAgent()
	b.buildStreams()
	b.buildSchemaRegistry()
	for _, role := range []Role{ForConsumer, ForProducer, ForAdmin} {
		b.checkClient(c.Client(role))
	}
	return c
}

var levels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

func (b *builder) buildAgent() {
	c := b.cfg
	c.Scripts = scripts.Get(c)
	c.HTTPListen = httpListen.Get(c)
	c.HTTPToken = httpToken.Get(c)
	c.HTTPTLSCert = httpTLSCert.Get(c)
	c.HTTPTLSKey = httpTLSKey.Get(c)
	c.HTTPAllowedHosts = b.hostNames(httpAllowedHosts)
	c.HTTPAllowUnauthenticated = httpAllowUnauthenticated.Get(c)
	c.HTTPMetricsUnauthenticated = httpMetricsUnauthenticated.Get(c)
	c.QueryMaxConcurrency = int(queryMaxConcurrency.Get(c))
	c.QueryTimeout = queryTimeout.Get(c)
	c.TapRecordsPerSecond = int(tapRecordsPerSecond.Get(c))
	c.TapMaxClients = int(tapMaxClients.Get(c))
	c.LogLevel = levels[logLevel.Get(c)]
	c.LogFormat = logFormat.Get(c)
	c.EmbeddedListen = embeddedListen.Get(c)
	c.EmbeddedPartitions = int32(embeddedPartitions.Get(c))
	c.EmbeddedDemo = embeddedDemo.Get(c)
	c.LuaCallTimeout = luaCallTimeout.Get(c)
	c.LuaMemoryMaxBytes = luaMemoryMaxBytes.Get(c)
	c.ShutdownTimeout = shutdownTimeout.Get(c)
	c.LeaveGroupOnClose = leaveGroupOnClose.Get(c)

	b.checkHostPort(httpListen.FullName(), c.HTTPListen, false)
	b.checkHostPort(embeddedListen.FullName(), c.EmbeddedListen, false)
	if (c.HTTPTLSCert == "") != (c.HTTPTLSKey == "") {
		if c.HTTPTLSCert == "" {
			b.fail(KindInvalid, httpTLSKey.FullName(), "set without agent.http.tls.cert: HTTPS needs both")
		} else {
			b.fail(KindInvalid, httpTLSCert.FullName(), "set without agent.http.tls.key: HTTPS needs both")
		}
	}
	if b.partial {
		return
	}
	if len(c.Scripts) == 0 {
		b.fail(KindMissing, scripts.FullName(), `required: the Lua scripts that build the topology, e.g. scripts = ["wordcount.lua"]`)
	}
	for _, s := range c.Scripts {
		b.checkFile(scripts.FullName(), s, 0) // the Lua runtime bounds the size it reads
	}
	b.checkFile(httpTLSCert.FullName(), c.HTTPTLSCert, MaxPEMBytes)
	b.checkFile(httpTLSKey.FullName(), c.HTTPTLSKey, MaxPEMBytes)
	if c.HTTPTLSCert != "" && c.HTTPTLSKey != "" {
		// Loaded as the agent loads them, so that validate fails where run would.
		if _, err := LoadKeyPair(c.HTTPTLSCert, c.HTTPTLSKey); err != nil {
			b.fail(KindInvalid, httpTLSCert.FullName(), "%v", err)
		}
	}
	b.readTokenFile()
	if !LoopbackListen(c.HTTPListen) && c.HTTPToken == "" && !c.HTTPAllowUnauthenticated {
		b.fail(KindInvalid, httpListen.FullName(), "%q listens beyond loopback without a token, so every store, the live tap and the status "+
			"would answer anyone who reaches the port: set agent.http.token.file (a file holding the token, such as a mounted secret) "+
			"or agent.http.token, or write agent.http.allow.unauthenticated = true to serve without one on purpose", c.HTTPListen)
	}
}

// maxTokenFileBytes bounds agent.http.token.file: a token is a line, and a path naming a
// device or a large file by mistake must not be read whole.
const maxTokenFileBytes = 4 << 10

// readTokenFile reads agent.http.token.file into HTTPToken.
func (b *builder) readTokenFile() {
	c, key := b.cfg, httpTokenFile.FullName()
	path := httpTokenFile.Get(c)
	if path == "" {
		return
	}
	if httpToken.IsSet(c) {
		b.fail(KindInvalid, key, "set together with agent.http.token: set one")
		return
	}
	data, err := ReadFile(path, maxTokenFileBytes)
	if err != nil {
		b.fail(KindInvalid, key, "cannot use %s: %v", path, err)
		return
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		b.fail(KindInvalid, key, "%s is empty: it must hold the token", path)
		return
	}
	if strings.ContainsAny(token, "\r\n") {
		b.fail(KindInvalid, key, "%s holds more than one line: it must hold the token alone", path)
		return
	}
	c.HTTPToken = token
}

// LoopbackListen reports whether a listen address (host:port) takes connections from this
// machine only: a loopback IP address or the name localhost. An empty host, an unspecified
// address (0.0.0.0, ::) and any other name listen beyond it.
func LoopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// validID matches what may prefix Kafka topic names: application.id becomes
// part of changelog topic names.
var validID = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func (b *builder) buildStreams() {
	c := b.cfg
	c.ApplicationID = applicationID.Get(c)
	c.BootstrapServers = bootstrapServers.Get(c)
	c.CommitInterval = commitInterval.Get(c)
	c.StateDir = stateDir.Get(c)
	if c.StateDir == "" {
		c.StateDir = filepath.Join(os.TempDir(), "stoatflow")
	}
	c.TransactionalStateStores = transactionalStateStores.Get(c)
	c.UncommittedMaxBytes = uncommittedMaxBytes.Get(c)
	c.DefaultIQIsolation = defaultIQIsolation.Get(c)
	c.DefaultKeySerde = defaultKeySerde.Get(c)
	c.DefaultValueSerde = defaultValueSerde.Get(c)
	c.WindowSize = windowSize.Get(c)
	c.DefaultTimestampExtractor = defaultTimestampExtractor.Get(c)
	c.MaxTaskIdle = maxTaskIdle.Get(c)
	c.CacheMaxBytes = orDeprecated(c, cacheMaxBytes, cacheMaxBytesBuffering)
	c.ApplicationServer = applicationServer.Get(c)
	c.BufferedRecordsPerPartition = int(bufferedRecordsPerPartition.Get(c))
	c.PollTime = pollTime.Get(c)
	c.TaskTimeout = taskTimeout.Get(c)
	c.TopologyOptimization = topologyOptimization.Get(c)
	c.WindowStoreChangelogAdditionalRetention = windowStoreChangelogAdditionalRetention.Get(c)
	c.DSLStoreFormat = dslStoreFormat.Get(c)
	c.NumStandbyReplicas = int(numStandbyReplicas.Get(c))
	c.NumStreamThreads = int(numStreamThreads.Get(c))
	c.GroupProtocol = groupProtocol.Get(c)
	if c.GroupProtocol == "streams" && numStandbyReplicas.IsSet(c) {
		// In a streams group the broker places the standby tasks, as many as the group's
		// streams.num.standby.replicas says; Kafka Streams ignores its client-side key then.
		b.fail(KindIgnored, numStandbyReplicas.FullName(), `ignored with group.protocol = "streams", as Kafka Streams ignores it: `+
			`the group's streams.num.standby.replicas, a config of the group on the brokers (kafka-configs.sh --entity-type groups), sets the standby tasks`)
	}
	b.checkDeadLetterQueue()

	rf := replicationFactor.Get(c)
	if rf == 0 || rf > 32767 {
		b.fail(KindInvalid, replicationFactor.FullName(), "invalid value %d: must be -1 (broker default) or between 1 and 32767", rf)
	}
	c.ReplicationFactor = int16(rf)

	opt := c.TopologyOptimization
	for _, o := range opt {
		if (o == "none" || o == "all") && len(opt) > 1 {
			b.fail(KindInvalid, topologyOptimization.FullName(), "%q cannot be combined with other values", o)
		}
	}
	if c.ApplicationServer != "" {
		b.checkHostPort(applicationServer.FullName(), c.ApplicationServer, true)
	}

	c.Embedded = len(c.BootstrapServers) == 1 && c.BootstrapServers[0] == "embedded"
	if !c.Embedded {
		for _, s := range c.BootstrapServers {
			if s == "embedded" {
				b.fail(KindInvalid, bootstrapServers.FullName(), `"embedded" cannot be combined with other servers`)
				continue
			}
			b.checkHostPort(bootstrapServers.FullName(), s, true)
		}
		if c.EmbeddedDemo != "" {
			b.fail(KindInvalid, embeddedDemo.FullName(), `a demo feeder writes into the embedded broker only (streams.bootstrap.servers = "embedded")`)
		}
	}

	consumer := c.Client(ForConsumer)
	c.ClientID = ClientID.unprefixed(c)
	if c.ClientID == "" {
		c.ClientID = c.ApplicationID
	}
	c.GroupInstanceID = groupInstanceID.Get(consumer)
	c.GroupInstanceIDSet = c.GroupInstanceID != ""
	c.AutoOffsetReset, _ = pipeline.ParseOffsetReset(AutoOffsetReset.Get(consumer)) // checkClient reports a bad value

	if b.partial {
		return
	}
	if c.ApplicationID == "" {
		b.fail(KindMissing, applicationID.FullName(), "required: the application's id (consumer group and internal topic prefix)")
	} else if !validID.MatchString(c.ApplicationID) {
		b.fail(KindInvalid, applicationID.FullName(), "invalid value %q: only letters, digits, '.', '_' and '-' (it prefixes topic names)", c.ApplicationID)
	}
	if len(c.BootstrapServers) == 0 {
		b.fail(KindMissing, bootstrapServers.FullName(), `required: Kafka brokers as host:port, or "embedded"`)
	}
	if c.GroupInstanceID == "" && c.ApplicationID != "" {
		host, err := os.Hostname()
		if err != nil {
			b.fail(KindMissing, groupInstanceID.FullName(), "no default: cannot read the host name (%v); set it", err)
		}
		c.GroupInstanceID = c.ApplicationID + "-" + host
	}
}

// checkHostPort checks a host:port address. connect requires a host and a
// port in 1..65535 (addresses others connect to); listen addresses may leave
// the host empty or use port 0.
func (b *builder) checkHostPort(key, addr string, connect bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		b.fail(KindInvalid, key, "invalid value %q: expected host:port", addr)
		return
	}
	n, err := strconv.Atoi(port)
	low := 0
	if connect {
		low = 1
	}
	if err != nil || n < low || n > 65535 {
		b.fail(KindInvalid, key, "invalid value %q: port must be a number between %d and 65535", addr, low)
		return
	}
	if connect && host == "" {
		b.fail(KindInvalid, key, "invalid value %q: expected host:port with a host", addr)
	}
}

// hostNames reads a list of DNS names as a Host header carries them (lower case, without
// the trailing dot); a port, a scheme or a path in an entry is an error.
func (b *builder) hostNames(key Setting[[]string]) []string {
	var out []string
	for _, h := range key.Get(b.cfg) {
		name := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
		if name == "" || strings.ContainsAny(name, ":/ []@") {
			b.fail(KindInvalid, key.FullName(), "invalid host name %q: expected a name such as stoatflow.default.svc, without port or scheme", h)
			continue
		}
		out = append(out, name)
	}
	return out
}

// checkFile checks that path names a regular file (of at most max bytes when max > 0): a
// directory, a FIFO or a device named by mistake would hang or stream when read.
func (b *builder) checkFile(key, path string, max int64) {
	if path == "" {
		return
	}
	st, err := os.Stat(path)
	if err != nil {
		if near, ok := closestFile(path); ok && errors.Is(err, fs.ErrNotExist) {
			b.fail(KindInvalid, key, "cannot use %s: %v; did you mean %s?", path, unwrapPathError(err), near)
			return
		}
		b.fail(KindInvalid, key, "cannot use %s: %v", path, unwrapPathError(err))
		return
	}
	if max <= 0 {
		max = st.Size()
	}
	if err := regular(st, max); err != nil {
		b.fail(KindInvalid, key, "cannot use %s: %v", path, err)
	}
}

// closestFile is the file beside path whose name is closest to path's, when it looks like a
// typo of it.
func closestFile(path string) (string, bool) {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", false
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	best, ok := suggest.Closest(filepath.Base(path), names)
	return filepath.Join(dir, best), ok
}

// unwrapPathError drops the path that os.Stat repeats in its error.
func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// checkClient checks the properties of one client: the settings Kafka Streams
// forces, and the security settings, which must make a working connection.
func (b *builder) checkClient(cl Client) {
	eos := b.cfg.ExactlyOnce()
	if d := bootstrapResolveTimeout.Get(cl); d > 0 {
		b.fail(KindOverridden, bootstrapResolveTimeout.Source(cl), "the setting (%d) is ignored and Kafka Streams' forced value (0) is used: "+
			"Kafka Streams does not support asynchronous bootstrap resolution (KAFKA-20939)", d.Milliseconds())
	}
	switch cl.Role() {
	case ForConsumer:
		if _, err := pipeline.ParseOffsetReset(AutoOffsetReset.Get(cl)); err != nil {
			b.fail(KindInvalid, AutoOffsetReset.Source(cl), "%v", err)
		}
		if eos && IsolationLevel.IsSet(cl) && IsolationLevel.Get(cl) != "read_committed" {
			b.fail(KindInvalid, IsolationLevel.Source(cl), "Kafka Streams forces read_committed under exactly_once_v2")
		}
		if HeartbeatInterval.Get(cl) >= SessionTimeout.Get(cl) {
			b.fail(KindInvalid, HeartbeatInterval.Source(cl), "invalid value %d: must be lower than session.timeout.ms (%d)",
				HeartbeatInterval.Get(cl).Milliseconds(), SessionTimeout.Get(cl).Milliseconds())
		}
	case ForProducer:
		acksAll := Acks.Get(cl) == "all"
		switch {
		case eos && EnableIdempotence.IsSet(cl) && !EnableIdempotence.Get(cl):
			b.fail(KindInvalid, EnableIdempotence.Source(cl), "Kafka Streams forces enable.idempotence = true under exactly_once_v2")
		case eos && !acksAll:
			b.fail(KindInvalid, Acks.Source(cl), `exactly_once_v2 needs acks = "all"`)
		case EnableIdempotence.IsSet(cl) && EnableIdempotence.Get(cl) && !acksAll:
			b.fail(KindInvalid, Acks.Source(cl), `enable.idempotence = true needs acks = "all"`)
		}
		// Kafka's idempotent producer keeps order across at most 5 requests in flight, and
		// Kafka Streams refuses more under exactly-once (StreamsConfig), as the Java producer
		// does with enable.idempotence = true set, even though sarama's produce requests go
		// one at a time per broker here.
		if n := MaxInFlightRequestsPerConnection.Get(cl); n > 5 {
			switch {
			case eos:
				b.fail(KindInvalid, MaxInFlightRequestsPerConnection.Source(cl), "invalid value %d: can't exceed 5 when exactly-once processing is enabled", n)
			case EnableIdempotence.IsSet(cl) && EnableIdempotence.Get(cl):
				b.fail(KindInvalid, MaxInFlightRequestsPerConnection.Source(cl), "invalid value %d: can't exceed 5 with enable.idempotence = true", n)
			}
		}
	}

	proto := SecurityProtocol.Get(cl)
	if strings.HasPrefix(proto, "SASL_") {
		b.checkSASL(cl)
	}
	if proto == "SSL" || proto == "SASL_SSL" {
		if !b.partial {
			b.checkFile(SSLTruststoreLocation.Source(cl), SSLTruststoreLocation.Get(cl), MaxPEMBytes)
			b.checkFile(SSLKeystoreLocation.Source(cl), SSLKeystoreLocation.Get(cl), MaxPEMBytes)
		}
	}
}

var jaasModule = map[string]string{
	"PLAIN":         PlainLoginModule,
	"SCRAM-SHA-256": ScramLoginModule,
	"SCRAM-SHA-512": ScramLoginModule,
}

func (b *builder) checkSASL(cl Client) {
	mech := SASLMechanism.Get(cl)
	module, ok := jaasModule[mech]
	if !ok {
		b.fail(KindUnsupported, SASLMechanism.Source(cl), "not supported yet: sasl.mechanism %s (use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", mech)
		return
	}
	jaasKey := SASLJAASConfig.Source(cl)
	if !SASLJAASConfig.IsSet(cl) {
		b.fail(KindMissing, jaasKey, "required with security.protocol %s: %s required username=\"...\" password=\"...\";", SecurityProtocol.Get(cl), module)
		return
	}
	j, err := cl.SASL()
	if err != nil {
		b.fail(KindInvalid, jaasKey, "invalid value: %v", err)
		return
	}
	if j.Module != module {
		// The text is secret: the module it names is shown only when it is a known one.
		other := "another one"
		if j.Module == PlainLoginModule || j.Module == ScramLoginModule {
			other = j.Module
		}
		b.fail(KindInvalid, jaasKey, "sasl.mechanism %s needs the login module %s, not %s", mech, module, other)
	}
}
