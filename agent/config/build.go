package config

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
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
	return &builder{dir: dir, cfg: &Config{Dir: dir, set: map[string]any{}}, lines: map[string]int{}}
}

func (b *builder) fail(key, format string, args ...any) {
	p := Problem{Key: key, Message: fmt.Sprintf(format, args...), Line: b.lines[key]}
	for _, have := range b.errs {
		if have.Key == p.Key && have.Message == p.Message {
			return
		}
	}
	b.errs = append(b.errs, p)
}

// apply checks one entry of the file and records its value.
func (b *builder) apply(e entry) {
	k, prefix, msg := lookup(e.section, e.name)
	if k == nil {
		b.errs = append(b.errs, Problem{Key: e.full(), Message: msg, Line: e.line})
		return
	}
	canon := string(k.Section) + "." + prefix + k.Name
	if first, dup := b.lines[canon]; dup {
		b.errs = append(b.errs, Problem{Key: e.full(), Message: fmt.Sprintf("set twice (first at line %d)", first), Line: e.line})
		return
	}
	b.lines[canon] = e.line
	switch k.Disposition {
	case Refused:
		b.fail(canon, "refused: %s", k.Reason)
		return
	case Unsupported:
		b.fail(canon, "not supported yet: %s", k.Reason)
		return
	}
	v, err := convert(k, e.raw)
	if err != nil {
		b.fail(canon, "%v", err)
		return
	}
	if k.Disposition == Ignored {
		b.cfg.Notices = append(b.cfg.Notices, Problem{Key: canon, Message: "ignored: " + k.Reason, Line: e.line})
		return
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

// get returns a key's value (set or default); the typed helpers below read it.
func (b *builder) get(full string) any { return b.cfg.value(full) }

func (b *builder) str(full string) string {
	s, _ := b.get(full).(string)
	return s
}

func (b *builder) num(full string) int64 {
	n, _ := b.get(full).(int64)
	return n
}

func (b *builder) flag(full string) bool {
	v, _ := b.get(full).(bool)
	return v
}

func (b *builder) dur(full string) time.Duration {
	d, _ := b.get(full).(time.Duration)
	return d
}

func (b *builder) list(full string) []string {
	l, _ := b.get(full).([]string)
	return l
}

// build fills the Config from the collected values and runs the checks that
// involve several keys or the file system.
func (b *builder) build() *Config {
	c := b.cfg
	// The guarantee decides other defaults, so it is read first.
	c.ProcessingGuarantee = b.str("streams.processing.guarantee")

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
	c.Scripts = b.list("agent.scripts")
	c.HTTPListen = b.str("agent.http.listen")
	c.HTTPToken = b.str("agent.http.token")
	c.HTTPTLSCert = b.str("agent.http.tls.cert")
	c.HTTPTLSKey = b.str("agent.http.tls.key")
	c.HTTPAllowedHosts = b.hostNames("agent.http.allowed.hosts")
	c.QueryMaxConcurrency = int(b.num("agent.http.query.max.concurrency"))
	c.QueryTimeout = b.dur("agent.http.query.timeout")
	c.LogLevel = levels[b.str("agent.log.level")]
	c.LogFormat = b.str("agent.log.format")
	c.EmbeddedListen = b.str("agent.embedded.listen")
	c.EmbeddedPartitions = int32(b.num("agent.embedded.partitions"))
	c.EmbeddedDemo = b.flag("agent.embedded.demo")
	c.LuaCallTimeout = b.dur("agent.lua.call.timeout")
	c.LuaMemoryMaxBytes = b.num("agent.lua.memory.max.bytes")
	c.ShutdownTimeout = b.dur("agent.shutdown.timeout")
	c.LeaveGroupOnClose = b.flag("agent.leave.group.on.close")

	b.checkHostPort("agent.http.listen", c.HTTPListen, false)
	b.checkHostPort("agent.embedded.listen", c.EmbeddedListen, false)
	if (c.HTTPTLSCert == "") != (c.HTTPTLSKey == "") {
		if c.HTTPTLSCert == "" {
			b.fail("agent.http.tls.key", "set without agent.http.tls.cert: HTTPS needs both")
		} else {
			b.fail("agent.http.tls.cert", "set without agent.http.tls.key: HTTPS needs both")
		}
	}
	if b.partial {
		return
	}
	if len(c.Scripts) == 0 {
		b.fail("agent.scripts", `required: the Lua scripts that build the topology, e.g. scripts = ["wordcount.lua"]`)
	}
	for _, s := range c.Scripts {
		b.checkFile("agent.scripts", s)
	}
	b.checkFile("agent.http.tls.cert", c.HTTPTLSCert)
	b.checkFile("agent.http.tls.key", c.HTTPTLSKey)
}

// validID matches what may prefix Kafka topic names: application.id becomes
// part of changelog topic names.
var validID = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func (b *builder) buildStreams() {
	c := b.cfg
	c.ApplicationID = b.str("streams.application.id")
	c.BootstrapServers = b.list("streams.bootstrap.servers")
	c.CommitInterval = b.dur("streams.commit.interval.ms")
	c.StateDir = b.str("streams.state.dir")
	if c.StateDir == "" {
		c.StateDir = filepath.Join(os.TempDir(), "stoatflow")
	}
	c.TransactionalStateStores = b.flag("streams.enable.transactional.statestores")
	c.UncommittedMaxBytes = b.num("streams.statestore.uncommitted.max.bytes")
	c.DefaultIQIsolation = b.str("streams.default.interactive.query.isolation.level")
	c.DefaultKeySerde = b.str("streams.default.key.serde")
	c.DefaultValueSerde = b.str("streams.default.value.serde")
	c.DefaultTimestampExtractor = b.str("streams.default.timestamp.extractor")
	c.MaxTaskIdle = b.dur("streams.max.task.idle.ms")
	c.CacheMaxBytes = b.num("streams.statestore.cache.max.bytes")
	if !b.cfg.IsSet("streams.statestore.cache.max.bytes") && b.cfg.IsSet("streams.cache.max.bytes.buffering") {
		c.CacheMaxBytes = b.num("streams.cache.max.bytes.buffering")
	}
	c.ApplicationServer = b.str("streams.application.server")
	c.BufferedRecordsPerPartition = int(b.num("streams.buffered.records.per.partition"))
	c.PollTime = b.dur("streams.poll.ms")
	c.TaskTimeout = b.dur("streams.task.timeout.ms")
	c.TopologyOptimization = b.list("streams.topology.optimization")
	c.WindowStoreChangelogAdditionalRetention = b.dur("streams.windowstore.changelog.additional.retention.ms")
	c.DSLStoreFormat = b.str("streams.dsl.store.format")
	b.checkDeadLetterQueue()

	rf := b.num("streams.replication.factor")
	if rf == 0 || rf > 32767 {
		b.fail("streams.replication.factor", "invalid value %d: must be -1 (broker default) or between 1 and 32767", rf)
	}
	c.ReplicationFactor = int16(rf)

	opt := c.TopologyOptimization
	for _, o := range opt {
		if (o == "none" || o == "all") && len(opt) > 1 {
			b.fail("streams.topology.optimization", "%q cannot be combined with other values", o)
		}
	}
	if c.ApplicationServer != "" {
		b.checkHostPort("streams.application.server", c.ApplicationServer, true)
	}

	c.Embedded = len(c.BootstrapServers) == 1 && c.BootstrapServers[0] == "embedded"
	if !c.Embedded {
		for _, s := range c.BootstrapServers {
			if s == "embedded" {
				b.fail("streams.bootstrap.servers", `"embedded" cannot be combined with other servers`)
				continue
			}
			b.checkHostPort("streams.bootstrap.servers", s, true)
		}
	}

	consumer := c.Client(ForConsumer)
	c.ClientID = b.str("streams.client.id")
	if c.ClientID == "" {
		c.ClientID = c.ApplicationID
	}
	c.GroupInstanceID = consumer.String("group.instance.id")

	if b.partial {
		return
	}
	if c.ApplicationID == "" {
		b.fail("streams.application.id", "required: the application's id (consumer group and internal topic prefix)")
	} else if !validID.MatchString(c.ApplicationID) {
		b.fail("streams.application.id", "invalid value %q: only letters, digits, '.', '_' and '-' (it prefixes topic names)", c.ApplicationID)
	}
	if len(c.BootstrapServers) == 0 {
		b.fail("streams.bootstrap.servers", `required: Kafka brokers as host:port, or "embedded"`)
	}
	if c.GroupInstanceID == "" && c.ApplicationID != "" {
		host, err := os.Hostname()
		if err != nil {
			b.fail("streams.group.instance.id", "no default: cannot read the host name (%v); set it", err)
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
		b.fail(key, "invalid value %q: expected host:port", addr)
		return
	}
	n, err := strconv.Atoi(port)
	low := 0
	if connect {
		low = 1
	}
	if err != nil || n < low || n > 65535 {
		b.fail(key, "invalid value %q: port must be a number between %d and 65535", addr, low)
		return
	}
	if connect && host == "" {
		b.fail(key, "invalid value %q: expected host:port with a host", addr)
	}
}

// hostNames reads a list of DNS names as a Host header carries them (lower case, without
// the trailing dot); a port, a scheme or a path in an entry is an error.
func (b *builder) hostNames(key string) []string {
	var out []string
	for _, h := range b.list(key) {
		name := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
		if name == "" || strings.ContainsAny(name, ":/ []@") {
			b.fail(key, "invalid host name %q: expected a name such as stoatflow.default.svc, without port or scheme", h)
			continue
		}
		out = append(out, name)
	}
	return out
}

func (b *builder) checkFile(key, path string) {
	if path == "" {
		return
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		b.fail(key, "cannot use %s: %v", path, unwrapPathError(err))
	case st.IsDir():
		b.fail(key, "cannot use %s: it is a directory", path)
	}
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
	switch cl.Role() {
	case ForConsumer:
		if eos && cl.IsSet("isolation.level") && cl.String("isolation.level") != "read_committed" {
			b.fail(cl.Source("isolation.level"), "Kafka Streams forces read_committed under exactly_once_v2")
		}
		if cl.Duration("heartbeat.interval.ms") >= cl.Duration("session.timeout.ms") {
			b.fail(cl.Source("heartbeat.interval.ms"), "invalid value %d: must be lower than session.timeout.ms (%d)",
				cl.Duration("heartbeat.interval.ms").Milliseconds(), cl.Duration("session.timeout.ms").Milliseconds())
		}
	case ForProducer:
		acksAll := cl.String("acks") == "all"
		switch {
		case eos && cl.IsSet("enable.idempotence") && !cl.Bool("enable.idempotence"):
			b.fail(cl.Source("enable.idempotence"), "Kafka Streams forces enable.idempotence = true under exactly_once_v2")
		case eos && !acksAll:
			b.fail(cl.Source("acks"), `exactly_once_v2 needs acks = "all"`)
		case cl.IsSet("enable.idempotence") && cl.Bool("enable.idempotence") && !acksAll:
			b.fail(cl.Source("acks"), `enable.idempotence = true needs acks = "all"`)
		}
	}

	proto := cl.String("security.protocol")
	if strings.HasPrefix(proto, "SASL_") {
		b.checkSASL(cl)
	}
	if proto == "SSL" || proto == "SASL_SSL" {
		if !b.partial {
			b.checkFile(cl.Source("ssl.truststore.location"), cl.String("ssl.truststore.location"))
			b.checkFile(cl.Source("ssl.keystore.location"), cl.String("ssl.keystore.location"))
		}
	}
}

var jaasModule = map[string]string{
	"PLAIN":         PlainLoginModule,
	"SCRAM-SHA-256": ScramLoginModule,
	"SCRAM-SHA-512": ScramLoginModule,
}

func (b *builder) checkSASL(cl Client) {
	mech := cl.String("sasl.mechanism")
	module, ok := jaasModule[mech]
	if !ok {
		b.fail(cl.Source("sasl.mechanism"), "not supported yet: sasl.mechanism %s (use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", mech)
		return
	}
	jaasKey := cl.Source("sasl.jaas.config")
	if !cl.IsSet("sasl.jaas.config") {
		b.fail(jaasKey, "required with security.protocol %s: %s required username=\"...\" password=\"...\";", cl.String("security.protocol"), module)
		return
	}
	j, err := cl.SASL()
	if err != nil {
		b.fail(jaasKey, "invalid value: %v", err)
		return
	}
	if j.Module != module {
		b.fail(jaasKey, "sasl.mechanism %s needs the login module %s, not %s", mech, module, j.Module)
	}
}
