package config

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/pipeline/serdes"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// base is a minimal valid file; tests append their keys to its tables.
const baseAgent = `[agent]
scripts = ["wc.lua"]
`
const baseStreams = `[streams]
application.id = "wordcount"
bootstrap.servers = "localhost:9092"
`

// tempDir holds wc.lua so that the base config's script exists.
func tempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "wc.lua"), []byte("return nil"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func parse(t *testing.T, agent, streams string) (*Config, error) {
	t.Helper()
	return Parse([]byte(baseAgent+agent+"\n"+baseStreams+streams), tempDir(t), "agent.toml")
}

func mustParse(t *testing.T, agent, streams string) *Config {
	t.Helper()
	cfg, err := parse(t, agent, streams)
	if err != nil {
		t.Fatalf("unexpected error:\n%v", err)
	}
	return cfg
}

func problems(t *testing.T, err error) []Problem {
	t.Helper()
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want *Errors, got %T: %v", err, err)
	}
	return errs.Problems
}

// wantKind checks that the problem whose line contains want is of that kind.
func wantKind(t *testing.T, err error, want string, kind Kind) {
	t.Helper()
	for _, p := range problems(t, err) {
		if strings.Contains(p.Format("agent.toml"), want) {
			if p.Kind != kind {
				t.Errorf("%q is a %v problem, want %v", want, p.Kind, kind)
			}
			return
		}
	}
	t.Errorf("no problem line contains %q", want)
}

func TestErrorClasses(t *testing.T) {
	cases := []struct {
		name           string
		agent, streams string
		want           string // one line of the error
		kind           Kind   // the kind of the problem on that line
	}{
		{"unknown key with suggestion", "", "comit.interval.ms = 100",
			`agent.toml:7: streams.comit.interval.ms: unknown key "streams.comit.interval.ms" (did you mean "commit.interval.ms"?)`, KindUnknown},
		{"unknown prefixed client key", "", "consumer.session.timout.ms = 100",
			`(did you mean "consumer.session.timeout.ms"?)`, KindUnknown},
		{"unknown agent key", "log.levle = \"info\"", "",
			`agent.log.levle: unknown key "agent.log.levle" (did you mean "log.level"?)`, KindUnknown},
		{"key in the wrong table", "application.server = \"h:1\"", "",
			`agent.application.server: unknown key "agent.application.server": it belongs in the [streams] table`, KindUnknown},
		{"wrong type", "", `poll.ms = true`,
			`streams.poll.ms: invalid value true: expected milliseconds (integer) or a duration like "10s"`, KindInvalid},
		{"wrong type string", "http.listen = 9464", "",
			`agent.http.listen: invalid value 9464: expected a string`, KindInvalid},
		{"bad integer", "", `buffered.records.per.partition = "many"`,
			`streams.buffered.records.per.partition: invalid value "many": expected an integer`, KindInvalid},
		{"below minimum", "embedded.partitions = 0", "",
			`agent.embedded.partitions: invalid value 0: must be at least 1`, KindInvalid},
		{"bad enum lists allowed values", "", `processing.guarantee = "twice"`,
			`streams.processing.guarantee: invalid value "twice": allowed values are "at_least_once", "exactly_once_v2"`, KindInvalid},
		{"bad duration", "", `commit.interval.ms = "abc"`,
			`agent.toml:7: streams.commit.interval.ms: invalid value "abc": expected milliseconds (integer) or a duration like "10s"`, KindInvalid},
		{"refused group.protocol consumer", "", `group.protocol = "consumer"`,
			`streams.group.protocol: value "consumer" refused: Kafka Streams' consumer uses the classic group protocol`, KindRefused},
		{"refused exactly_once", "", `processing.guarantee = "exactly_once"`,
			`value "exactly_once" refused: removed in Kafka Streams 4.0, use exactly_once_v2`, KindRefused},
		{"refused exactly_once_beta", "", `processing.guarantee = "exactly_once_beta"`,
			`removed in Kafka Streams 4.0, use exactly_once_v2`, KindRefused},
		{"refused key", "", `consumer.group.id = "x"`,
			`streams.consumer.group.id: refused: Kafka Streams uses application.id as the group id`, KindRefused},
		{"enable.auto.commit true", "", `enable.auto.commit = true`,
			`Kafka Streams forces enable.auto.commit = false`, KindRefused},
		{"unmapped Kafka key", "", `check.crcs = true`,
			`streams.check.crcs: not supported yet: check.crcs`, KindUnsupported},
		{"unmapped prefixed Kafka key", "", `producer.check.crcs = true`,
			`streams.producer.check.crcs: not supported yet: check.crcs`, KindUnsupported},
		{"client key for the wrong client", "", `consumer.linger.ms = 1`,
			`linger.ms is a producer setting, not a consumer one`, KindUnknown},
		{"streams key with a client prefix", "", `producer.poll.ms = 1`,
			`poll.ms is a Kafka Streams setting and cannot be set per client`, KindUnknown},
		{"unsupported prefix", "", `restore.consumer.fetch.max.bytes = 1`,
			`not supported yet: a separate restore consumer`, KindUnsupported},
		{"unknown handler class", "", `processing.exception.handler = "org.apache.kafka.streams.errors.LogAndContinueExceptionHandler"`,
			`streams.processing.exception.handler: invalid value "org.apache.kafka.streams.errors.LogAndContinueExceptionHandler": allowed values are "LogAndFail", "LogAndContinue"`, KindInvalid},
		{"bad dead letter topic", "", `errors.dead.letter.queue.topic.name = "dead letters"`,
			`streams.errors.dead.letter.queue.topic.name: invalid value "dead letters": a topic name`, KindInvalid},
		{"application.server not host:port", "", `application.server = "localhost"`,
			`streams.application.server: invalid value "localhost": expected host:port`, KindInvalid},
		{"application.server bad port", "", `application.server = "localhost:http"`,
			`port must be a number between 1 and 65535`, KindInvalid},
		{"allowed host with a port", `http.allowed.hosts = ["svc", "svc:9464"]`, "",
			`agent.http.allowed.hosts: invalid host name "svc:9464": expected a name such as stoatflow.default.svc, without port or scheme`, KindInvalid},
		{"allowed host as a URL", `http.allowed.hosts = "http://svc"`, "", `invalid host name "http://svc"`, KindInvalid},
		{"no queries at once", "http.query.max.concurrency = 0", "",
			`agent.http.query.max.concurrency: invalid value 0: must be at least 1`, KindInvalid},
		{"no time for a query", "http.query.timeout = 0", "", `agent.http.query.timeout: invalid value 0`, KindInvalid},
		{"demo feeder with a real broker", `embedded.demo = "lines"`, "",
			`agent.toml:3: agent.embedded.demo: a demo feeder writes into the embedded broker only (streams.bootstrap.servers = "embedded")`, KindInvalid},
		{"tls cert without key", `http.tls.cert = "cert.pem"`, "",
			`agent.http.tls.cert: set without agent.http.tls.key: HTTPS needs both`, KindInvalid},
		{"tls key without cert", `http.tls.key = "key.pem"`, "",
			`agent.http.tls.key: set without agent.http.tls.cert: HTTPS needs both`, KindInvalid},
		{"set twice", "", "commit.interval.ms = 1\n\"commit.interval.ms\" = 2",
			`agent.toml:8: streams.commit.interval.ms: set twice (first at line 7)`, KindDuplicate},
		{"isolation under EOS", "", "processing.guarantee = \"exactly_once_v2\"\nconsumer.isolation.level = \"read_uncommitted\"",
			`streams.consumer.isolation.level: Kafka Streams forces read_committed under exactly_once_v2`, KindInvalid},
		{"idempotence off under EOS", "", "processing.guarantee = \"exactly_once_v2\"\nenable.idempotence = false",
			`Kafka Streams forces enable.idempotence = true under exactly_once_v2`, KindInvalid},
		{"acks under EOS", "", "processing.guarantee = \"exactly_once_v2\"\nacks = 1",
			`streams.acks: exactly_once_v2 needs acks = "all"`, KindInvalid},
		{"max in flight under EOS", "", "processing.guarantee = \"exactly_once_v2\"\nproducer.max.in.flight.requests.per.connection = 6",
			`streams.producer.max.in.flight.requests.per.connection: invalid value 6: can't exceed 5 when exactly-once processing is enabled`, KindInvalid},
		{"max in flight with idempotence", "", "enable.idempotence = true\nmax.in.flight.requests.per.connection = 6",
			`streams.max.in.flight.requests.per.connection: invalid value 6: can't exceed 5 with enable.idempotence = true`, KindInvalid},
		{"heartbeat not below session", "", "heartbeat.interval.ms = \"1m\"",
			`streams.heartbeat.interval.ms: invalid value 60000: must be lower than session.timeout.ms (45000)`, KindInvalid},
		{"replication factor 0", "", "replication.factor = 0",
			`must be -1 (broker default) or between 1 and 32767`, KindInvalid},
		{"optimization none with others", "", `topology.optimization = "none,all"`,
			`"none" cannot be combined with other values`, KindInvalid},
		{"jks truststore", "", `ssl.truststore.type = "JKS"`,
			`StoatFlow reads PEM files only`, KindRefused},
		{"encrypted key", "", `ssl.key.password = "x"`,
			`not supported yet: encrypted private keys`, KindUnsupported},
		{"gssapi", "", "security.protocol = \"SASL_PLAINTEXT\"\nsasl.jaas.config = \"x\"",
			`streams.sasl.mechanism: not supported yet: sasl.mechanism GSSAPI`, KindUnsupported},
		{"sasl without jaas", "", "security.protocol = \"SASL_SSL\"\nsasl.mechanism = \"PLAIN\"",
			`streams.sasl.jaas.config: required with security.protocol SASL_SSL`, KindMissing},
		{"jaas module mismatch", "", "security.protocol = \"SASL_SSL\"\nsasl.mechanism = \"SCRAM-SHA-256\"\n" +
			`sasl.jaas.config = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";'`,
			`sasl.mechanism SCRAM-SHA-256 needs the login module org.apache.kafka.common.security.scram.ScramLoginModule`, KindInvalid},
		{"bad jaas", "", "security.protocol = \"SASL_SSL\"\nsasl.mechanism = \"PLAIN\"\nsasl.jaas.config = 'PlainLoginModule username=\"u\";'",
			`streams.sasl.jaas.config: invalid value: invalid control flag after the login module`, KindInvalid},
		{"offset reset", "", `consumer.auto.offset.reset = "by_duration:1h"`,
			`streams.consumer.auto.offset.reset: invalid value "by_duration:1h": "1h" is not an ISO-8601 duration`, KindInvalid},
		{"negative offset reset", "", `auto.offset.reset = "by_duration:-PT1S"`,
			`streams.auto.offset.reset: invalid value "by_duration:-PT1S": negative duration is not supported`, KindInvalid},
		{"missing truststore", "", "security.protocol = \"SSL\"\nssl.truststore.location = \"nope.pem\"",
			`streams.ssl.truststore.location: cannot use`, KindInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, tc.agent, tc.streams)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not contain %q:\n%v", tc.want, err)
			}
			wantKind(t, err, tc.want, tc.kind)
		})
	}
}

// TestErrorsShowTheValueAsWritten: an invalid number, boolean or date-time is shown as the
// file writes it, not as its decoded value prints (the float 2.0 as 2, 0x100 as 256).
func TestErrorsShowTheValueAsWritten(t *testing.T) {
	for _, c := range []struct{ agent, streams, want string }{
		{"", "num.stream.threads = 2.0", `agent.toml:7: streams.num.stream.threads: invalid value 2.0: expected an integer`},
		{"", "num.stream.threads = 2e0", `agent.toml:7: streams.num.stream.threads: invalid value 2e0: expected an integer`},
		{"", "num.stream.threads = -inf", `agent.toml:7: streams.num.stream.threads: invalid value -inf: expected an integer`},
		{"", "num.stream.threads = 0x100", `agent.toml:7: streams.num.stream.threads: invalid value 0x100: must be at most 64`},
		{"", "num.stream.threads = -0", `agent.toml:7: streams.num.stream.threads: invalid value -0: must be at least 1`},
		{"", "num.stream.threads = 1_000", `agent.toml:7: streams.num.stream.threads: invalid value 1_000: must be at most 64`},
		{"", `num.stream.threads = "0"`, `agent.toml:7: streams.num.stream.threads: invalid value "0": must be at least 1`},
		{"", "replication.factor = 0o7777777777777", `agent.toml:7: streams.replication.factor: invalid value 0o7777777777777: out of the range of a 32-bit integer`},
		{"", "commit.interval.ms = 1.5e3", `agent.toml:7: streams.commit.interval.ms: invalid value 1.5e3: expected milliseconds (integer) or a duration like "10s"`},
		{"", "commit.interval.ms = 0x7fffffffffffffff", `agent.toml:7: streams.commit.interval.ms: invalid value 0x7fffffffffffffff: too large`},
		{"", "enable.auto.commit = 0.0", `agent.toml:7: streams.enable.auto.commit: invalid value 0.0: expected true or false`},
		{"", "processing.guarantee = 1.0", `agent.toml:7: streams.processing.guarantee: invalid value 1.0: allowed values are`},
		{"http.listen = 1979-05-27T07:32:00Z", "", `agent.toml:3: agent.http.listen: invalid value 1979-05-27T07:32:00Z: expected a string`},
		{"http.allowed.hosts = 9464.0", "", `agent.toml:3: agent.http.allowed.hosts: invalid value 9464.0: expected a list of strings or a comma-separated string`},
		{`http.allowed.hosts = ["svc", 2.0, 3e0]`, "", `agent.toml:3: agent.http.allowed.hosts: invalid value ["svc", 2.0, 3.0]: expected a list of strings`},
	} {
		_, err := parse(t, c.agent, c.streams)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s%s: error %v, want %q", c.agent, c.streams, err, c.want)
		}
	}
}

func TestTopLevelKey(t *testing.T) {
	_, err := Parse([]byte("application.id = \"x\"\n"+baseAgent+baseStreams), tempDir(t), "agent.toml")
	want := `agent.toml:1: application.id: unknown key "application.id": it belongs in the [streams] table`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("want %q, got %v", want, err)
	}
}

func TestEmbeddedCombined(t *testing.T) {
	_, err := Parse([]byte(baseAgent+"[streams]\napplication.id = \"a\"\nbootstrap.servers = [\"embedded\", \"h:1\"]\n"), tempDir(t), "agent.toml")
	if err == nil || !strings.Contains(err.Error(), `"embedded" cannot be combined with other servers`) {
		t.Fatalf("got %v", err)
	}
}

func TestBootstrapServerNotHostPort(t *testing.T) {
	data := baseAgent + "[streams]\napplication.id = \"a\"\nbootstrap.servers = \"h1:9092, h2\"\n"
	_, err := Parse([]byte(data), tempDir(t), "agent.toml")
	if err == nil || !strings.Contains(err.Error(), `streams.bootstrap.servers: invalid value "h2": expected host:port`) {
		t.Fatalf("got %v", err)
	}
}

func TestIgnoredKeyIsNotice(t *testing.T) {
	cfg := mustParse(t, "", "max.warmup.replicas = 2\nupgrade.from = \"3.9\"\nacceptable.recovery.lag = 5")
	if len(cfg.Notices) != 3 {
		t.Fatalf("want 3 notices, got %v", cfg.Notices)
	}
	for _, n := range cfg.Notices {
		if n.Kind != KindIgnored || !n.Kind.Notice() {
			t.Errorf("notice %+v is not of the kind ignored", n)
		}
	}
	n := cfg.Notices[0]
	if n.Key != "streams.max.warmup.replicas" || n.Line != 7 || !strings.HasPrefix(n.Message, "ignored: ") {
		t.Fatalf("unexpected notice %+v", n)
	}
	if got := n.Format("agent.toml"); !strings.HasPrefix(got, "agent.toml:7: streams.max.warmup.replicas: ignored: applies to tasks spread") {
		t.Fatalf("unexpected notice line %q", got)
	}
}

// In a streams group the broker places the standby tasks (the group's
// streams.num.standby.replicas): num.standby.replicas is ignored, with a notice, as Kafka
// Streams ignores it; the classic mode takes it.
func TestNumStandbyReplicasIgnoredInStreamsGroup(t *testing.T) {
	cfg := mustParse(t, "", "group.protocol = \"streams\"\nnum.standby.replicas = 2")
	wantNotices(t, cfg, KindIgnored, `agent.toml:8: streams.num.standby.replicas: ignored with group.protocol = "streams", as Kafka Streams ignores it: `+
		`the group's streams.num.standby.replicas, a config of the group on the brokers (kafka-configs.sh --entity-type groups), sets the standby tasks`)
	cfg = mustParse(t, "", "num.standby.replicas = 2")
	wantNotices(t, cfg, KindIgnored)
	if cfg.NumStandbyReplicas != 2 {
		t.Fatalf("num.standby.replicas = %d in the classic mode, want 2", cfg.NumStandbyReplicas)
	}
}

// wantNotices checks that cfg's notices are exactly want, each of kind, formatted for
// agent.toml.
func wantNotices(t *testing.T, cfg *Config, kind Kind, want ...string) {
	t.Helper()
	var got []string
	for _, n := range cfg.Notices {
		if n.Kind != kind {
			t.Errorf("notice %+v is not of the kind %s", n, kind)
		}
		got = append(got, n.Format("agent.toml"))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("notices:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A key set under a name Kafka deprecated still works and is a notice naming the key to use,
// which the running agent logs as a warning; every key documented as deprecated says so.
func TestDeprecatedKeysAreNotices(t *testing.T) {
	cfg := mustParse(t, "", "cache.max.bytes.buffering = 0\ndefault.deserialization.exception.handler = \"LogAndContinue\"\ndefault.production.exception.handler = \"LogAndContinue\"")
	wantNotices(t, cfg, KindDeprecated,
		"agent.toml:7: streams.cache.max.bytes.buffering: deprecated since Kafka 3.4; use statestore.cache.max.bytes",
		"agent.toml:8: streams.default.deserialization.exception.handler: deprecated since Kafka 4.0; use deserialization.exception.handler",
		"agent.toml:9: streams.default.production.exception.handler: deprecated since Kafka 4.0; use production.exception.handler",
	)
	if cfg.CacheMaxBytes != 0 || !cfg.ContinueOnDeserializationError() || !cfg.ContinueOnProductionError() {
		t.Errorf("the deprecated keys' values were not used: cache %d", cfg.CacheMaxBytes)
	}
	for _, table := range tables {
		for _, k := range table.keys {
			if strings.HasPrefix(k.Doc, "Deprecated") && k.Disposition == Normal && k.Deprecated == "" {
				t.Errorf("%s is documented as deprecated but setting it gives no notice", k.FullName())
			}
		}
	}
}

// Kafka Streams 4.4 forces bootstrap.resolve.timeout.ms to 0 for all its clients and
// warns about a positive value (KAFKA-20939); 0 is accepted silently, under every prefix.
func TestBootstrapResolveTimeoutForcedToZero(t *testing.T) {
	cfg := mustParse(t, "", "bootstrap.resolve.timeout.ms = 0\nadmin.bootstrap.resolve.timeout.ms = 0")
	if len(cfg.Notices) != 0 {
		t.Fatalf("0 is Kafka Streams' own value, want no notice, got %v", cfg.Notices)
	}
	cfg = mustParse(t, "", "bootstrap.resolve.timeout.ms = 30000\nproducer.bootstrap.resolve.timeout.ms = \"1m\"")
	wantNotices(t, cfg, KindOverridden,
		"agent.toml:7: streams.bootstrap.resolve.timeout.ms: the setting (30000) is ignored and Kafka Streams' forced value (0) is used: Kafka Streams does not support asynchronous bootstrap resolution (KAFKA-20939)",
		"agent.toml:8: streams.producer.bootstrap.resolve.timeout.ms: the setting (60000) is ignored and Kafka Streams' forced value (0) is used: Kafka Streams does not support asynchronous bootstrap resolution (KAFKA-20939)",
	)
	if _, err := parse(t, "", "consumer.bootstrap.resolve.timeout.ms = -1"); err == nil {
		t.Fatal("a negative timeout is accepted")
	}
}

func TestIgnoredKeyStillTypeChecked(t *testing.T) {
	_, err := parse(t, "", `max.warmup.replicas = "two"`)
	if err == nil || !strings.Contains(err.Error(), `invalid value "two": expected an integer`) {
		t.Fatalf("got %v", err)
	}
}

func TestMissingRequired(t *testing.T) {
	_, err := Parse([]byte("[agent]\n[streams]\n"), t.TempDir(), "agent.toml")
	ps := problems(t, err)
	want := map[string]bool{"agent.scripts": true, "streams.application.id": true, "streams.bootstrap.servers": true}
	for _, p := range ps {
		delete(want, p.Key)
		if !strings.HasPrefix(p.Message, "required: ") || p.Kind != KindMissing {
			t.Errorf("unexpected %v problem %q", p.Kind, p.Message)
		}
	}
	if len(want) > 0 {
		t.Fatalf("missing problems for %v in %v", want, err)
	}
}

func TestSeveralProblemsAtOnce(t *testing.T) {
	data := `[agent]
scripts = ["wc.lua", "missing.lua"]
log.level = "loud"
[streams]
bootstrap.servers = "localhost:9092"
comit.interval.ms = 100
poll.ms = "soon"
`
	_, err := Parse([]byte(data), tempDir(t), "agent.toml")
	ps := problems(t, err)
	if len(ps) != 5 {
		t.Fatalf("want 5 problems, got %d:\n%v", len(ps), err)
	}
	lines := strings.Split(err.Error(), "\n")
	wantPrefixes := []string{
		"agent.toml:2: agent.scripts: cannot use ",
		"agent.toml:3: agent.log.level: invalid value",
		"agent.toml:6: streams.comit.interval.ms: unknown key",
		"agent.toml:7: streams.poll.ms: invalid value",
		"agent.toml: streams.application.id: required",
	}
	if len(lines) != len(wantPrefixes) {
		t.Fatalf("want %d lines, got:\n%v", len(wantPrefixes), err)
	}
	for i, w := range wantPrefixes {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
		}
	}
}

func TestScriptsResolveRelativeToConfigDir(t *testing.T) {
	dir := tempDir(t)
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scripts", "b.lua"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(dir, "wc.lua")
	data := "[agent]\nscripts = [\"scripts/b.lua\", \"" + abs + "\"]\n" + baseStreams
	path := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // the working directory must not matter
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, "scripts", "b.lua"), abs}
	if strings.Join(cfg.Scripts, ",") != strings.Join(want, ",") {
		t.Fatalf("scripts = %v, want %v", cfg.Scripts, want)
	}
	if cfg.Path != path || cfg.Dir != dir {
		t.Fatalf("path/dir = %q/%q, want %q/%q", cfg.Path, cfg.Dir, path, dir)
	}
}

func TestMissingScript(t *testing.T) {
	dir := tempDir(t)
	_, err := Parse([]byte("[agent]\nscripts = [\"gone.lua\"]\n"+baseStreams), dir, "agent.toml")
	want := "agent.toml:2: agent.scripts: cannot use " + filepath.Join(dir, "gone.lua") + ": no such file or directory"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

func TestBothKeySpellings(t *testing.T) {
	for _, spelling := range []string{
		"commit.interval.ms = 250",
		`"commit.interval.ms" = 250`,
		`commit."interval.ms" = "250ms"`,
		"commit = { interval.ms = 250 }",
	} {
		cfg := mustParse(t, "", spelling)
		if cfg.CommitInterval != 250*time.Millisecond {
			t.Errorf("%s: commit interval %v", spelling, cfg.CommitInterval)
		}
	}
	cfg := mustParse(t, "", "[streams.producer]\nlinger.ms = 7\n[streams.consumer]\n\"session.timeout.ms\" = \"20s\"")
	if d := Linger.Get(cfg.Client(ForProducer)); d != 7*time.Millisecond {
		t.Errorf("producer linger %v", d)
	}
	if d := SessionTimeout.Get(cfg.Client(ForConsumer)); d != 20*time.Second {
		t.Errorf("consumer session timeout %v", d)
	}
}

func TestSyntaxErrorKeepsPosition(t *testing.T) {
	_, err := Parse([]byte("[agent]\nscripts = [\"a.lua\"\n"), t.TempDir(), "agent.toml")
	ps := problems(t, err)
	if len(ps) != 1 || ps[0].Kind != KindSyntax || ps[0].Line == 0 || ps[0].Column == 0 || !strings.HasPrefix(ps[0].Message, "TOML syntax error: ") {
		t.Fatalf("got %+v", ps)
	}
	if !strings.HasPrefix(err.Error(), "agent.toml:") {
		t.Fatalf("got %q", err)
	}
}

func TestDefaults(t *testing.T) {
	cfg := mustParse(t, "", "")
	checks := []struct {
		name      string
		got, want any
	}{
		{"commit interval", cfg.CommitInterval, 30 * time.Second},
		{"guarantee", cfg.ProcessingGuarantee, "at_least_once"},
		{"exactly once", cfg.ExactlyOnce(), false},
		{"http", cfg.HTTPListen, "127.0.0.1:9464"},
		{"allowed hosts", len(cfg.HTTPAllowedHosts), 0},
		{"queries at once", cfg.QueryMaxConcurrency, 4},
		{"query timeout", cfg.QueryTimeout, 30 * time.Second},
		{"log level", cfg.LogLevel, slog.LevelInfo},
		{"log format", cfg.LogFormat, "text"},
		{"embedded listen", cfg.EmbeddedListen, "127.0.0.1:0"},
		{"embedded partitions", cfg.EmbeddedPartitions, int32(1)},
		{"lua timeout", cfg.LuaCallTimeout, time.Second},
		{"shutdown", cfg.ShutdownTimeout, 30 * time.Second},
		{"state dir", cfg.StateDir, filepath.Join(os.TempDir(), "stoatflow")},
		{"transactional stores", cfg.TransactionalStateStores, false},
		{"uncommitted bytes", cfg.UncommittedMaxBytes, int64(67108864)},
		{"iq isolation", cfg.DefaultIQIsolation, "READ_UNCOMMITTED"},
		{"key serde", cfg.DefaultKeySerde, "string"},
		{"value serde", cfg.DefaultValueSerde, "string"},
		{"max task idle", cfg.MaxTaskIdle, time.Duration(0)},
		{"replication", cfg.ReplicationFactor, int16(-1)},
		{"client id", cfg.ClientID, "wordcount"},
		{"poll", cfg.PollTime, 100 * time.Millisecond},
		{"buffered", cfg.BufferedRecordsPerPartition, 1000},
		{"optimization", strings.Join(cfg.TopologyOptimization, ","), "none"},
		{"extractor", cfg.DefaultTimestampExtractor, "FailOnInvalidTimestamp"},
		{"offset reset", AutoOffsetReset.Get(cfg.Client(ForConsumer)), "earliest"},
		{"isolation", IsolationLevel.Get(cfg.Client(ForConsumer)), "read_uncommitted"},
		{"linger", Linger.Get(cfg.Client(ForProducer)), 5 * time.Millisecond},
		{"embedded", cfg.Embedded, false},
		{"notices", len(cfg.Notices), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GroupInstanceID != "wordcount-"+host {
		t.Errorf("group.instance.id = %q", cfg.GroupInstanceID)
	}
	// A demo feeder needs the embedded broker.
	demo, err := Parse([]byte(baseAgent+"embedded.demo = \"lines\"\n[streams]\napplication.id = \"wc\"\nbootstrap.servers = \"embedded\"\n"), tempDir(t), "agent.toml")
	if err != nil {
		t.Errorf("embedded.demo with the embedded broker: %v", err)
	} else if demo.EmbeddedDemo != "lines" {
		t.Errorf("embedded.demo = %q", demo.EmbeddedDemo)
	}
}

func TestExactlyOnceDefaults(t *testing.T) {
	cfg := mustParse(t, "", `processing.guarantee = "exactly_once_v2"`)
	if !cfg.ExactlyOnce() || cfg.CommitInterval != 100*time.Millisecond {
		t.Fatalf("EOS commit interval %v", cfg.CommitInterval)
	}
	if got := IsolationLevel.Get(cfg.Client(ForConsumer)); got != "read_committed" {
		t.Errorf("isolation %q", got)
	}
	if got := Linger.Get(cfg.Client(ForProducer)); got != 0 {
		t.Errorf("linger %v", got)
	}
	if got := TransactionTimeout.Get(cfg.Client(ForProducer)); got != 10*time.Second {
		t.Errorf("transaction timeout %v", got)
	}
	set := mustParse(t, "", "processing.guarantee = \"exactly_once_v2\"\ncommit.interval.ms = \"2s\"")
	if set.CommitInterval != 2*time.Second {
		t.Fatalf("user commit interval under EOS %v", set.CommitInterval)
	}
}

func TestValuesSet(t *testing.T) {
	cfg := mustParse(t, `http.listen = ":8080"
http.token = "s3cret"
http.allowed.hosts = ["Stoat.Default.Svc.", "stoat-1"]
http.query.max.concurrency = 16
http.query.timeout = "5s"
log.level = "DEBUG"
log.format = "json"
embedded.partitions = 4
lua.call.timeout = "250ms"
shutdown.timeout = 5000
leave.group.on.close = true`, `state.dir = "state"
enable.transactional.statestores = "true"
statestore.uncommitted.max.bytes = -1
default.interactive.query.isolation.level = "read_committed"
default.value.serde = "org.apache.kafka.common.serialization.Serdes$LongSerde"
max.task.idle.ms = -1
application.server = "stoat.example:9464"
group.instance.id = "stoat-1"
group.protocol = "streams"
num.standby.replicas = 0
client.id = "wc"
replication.factor = 3
topology.optimization = ["reuse.ktable.source.topics", "merge.repartition.topics"]
deserialization.exception.handler = "org.apache.kafka.streams.errors.LogAndFailExceptionHandler"
default.timestamp.extractor = "org.apache.kafka.streams.processor.WallclockTimestampExtractor"`)
	dir := cfg.Dir
	checks := []struct {
		name      string
		got, want any
	}{
		{"listen", cfg.HTTPListen, ":8080"},
		{"token", cfg.HTTPToken, "s3cret"},
		{"allowed hosts", strings.Join(cfg.HTTPAllowedHosts, ","), "stoat.default.svc,stoat-1"},
		{"queries at once", cfg.QueryMaxConcurrency, 16},
		{"query timeout", cfg.QueryTimeout, 5 * time.Second},
		{"level", cfg.LogLevel, slog.LevelDebug},
		{"format", cfg.LogFormat, "json"},
		{"partitions", cfg.EmbeddedPartitions, int32(4)},
		{"lua", cfg.LuaCallTimeout, 250 * time.Millisecond},
		{"shutdown", cfg.ShutdownTimeout, 5 * time.Second},
		{"leave", cfg.LeaveGroupOnClose, true},
		{"state dir", cfg.StateDir, filepath.Join(dir, "state")},
		{"tx stores", cfg.TransactionalStateStores, true},
		{"uncommitted", cfg.UncommittedMaxBytes, int64(-1)},
		{"iq", cfg.DefaultIQIsolation, "READ_COMMITTED"},
		{"value serde", cfg.DefaultValueSerde, "long"},
		{"idle", cfg.MaxTaskIdle, -time.Millisecond},
		{"app server", cfg.ApplicationServer, "stoat.example:9464"},
		{"instance", cfg.GroupInstanceID, "stoat-1"},
		{"group protocol", cfg.GroupProtocol, "streams"},
		{"client id", cfg.ClientID, "wc"},
		{"rf", cfg.ReplicationFactor, int16(3)},
		{"optimization", strings.Join(cfg.TopologyOptimization, ","), "reuse.ktable.source.topics,merge.repartition.topics"},
		{"extractor", cfg.DefaultTimestampExtractor, "WallclockTimestampExtractor"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestEmbedded(t *testing.T) {
	cfg, err := Parse([]byte(baseAgent+"[streams]\napplication.id = \"a\"\nbootstrap.servers = \"embedded\"\n"), tempDir(t), "agent.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Embedded {
		t.Fatal("not embedded")
	}
}

func TestClientPrefixesOverride(t *testing.T) {
	cfg := mustParse(t, "", `session.timeout.ms = 20000
consumer.session.timeout.ms = 30000
main.consumer.session.timeout.ms = 40000
request.timeout.ms = 1000
producer.request.timeout.ms = 2000
security.protocol = "ssl"`)
	con, pro, adm := cfg.Client(ForConsumer), cfg.Client(ForProducer), cfg.Client(ForAdmin)
	if d := SessionTimeout.Get(con); d != 40*time.Second {
		t.Errorf("consumer session %v", d)
	}
	if s := SessionTimeout.Source(con); s != "streams.main.consumer.session.timeout.ms" {
		t.Errorf("source %q", s)
	}
	if d := RequestTimeout.Get(pro); d != 2*time.Second {
		t.Errorf("producer request timeout %v", d)
	}
	if d := RequestTimeout.Get(adm); d != time.Second {
		t.Errorf("admin request timeout %v", d)
	}
	if !RequestTimeout.IsSet(adm) || Retries.IsSet(adm) {
		t.Error("IsSet")
	}
	if p := SecurityProtocol.Get(adm); p != "SSL" {
		t.Errorf("protocol %q (enums are canonicalised)", p)
	}
}

func TestDefaultConfig(t *testing.T) {
	cfg := Default()
	if cfg.CommitInterval != 30*time.Second || cfg.DefaultKeySerde != "string" || len(cfg.Scripts) != 0 || cfg.ApplicationID != "" {
		t.Fatalf("unexpected default %+v", cfg)
	}
	if cfg.StateDir == "" || cfg.HTTPListen != "127.0.0.1:9464" {
		t.Fatalf("unexpected default %+v", cfg)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "none.toml"))
	if err == nil || !strings.Contains(err.Error(), "cannot read config") {
		t.Fatalf("got %v", err)
	}
	if ps := problems(t, err); len(ps) != 1 || ps[0].Kind != KindUnreadable {
		t.Fatalf("got %+v", ps)
	}
}

// The default serdes are the serde registry's built-in serdes, by their names and Kafka's
// class names; the Schema Registry serdes need a schema or subject per topic, so they are
// not default serdes.
func TestDefaultSerdesComeFromTheRegistry(t *testing.T) {
	for _, name := range serdes.Builtin() {
		cfg := mustParse(t, "", fmt.Sprintf("default.key.serde = %q\ndefault.value.serde = %q", name, strings.ToUpper(name)))
		if cfg.DefaultKeySerde != name || cfg.DefaultValueSerde != name {
			t.Errorf("%s: key serde %q, value serde %q", name, cfg.DefaultKeySerde, cfg.DefaultValueSerde)
		}
	}
	cfg := mustParse(t, "", `default.key.serde = "org.apache.kafka.common.serialization.Serdes$IntegerSerde"`)
	if cfg.DefaultKeySerde != "integer" {
		t.Errorf("Kafka's IntegerSerde: %q", cfg.DefaultKeySerde)
	}
	for _, name := range schemas.Names {
		_, err := parse(t, "", fmt.Sprintf("default.value.serde = %q", name))
		want := fmt.Sprintf(`streams.default.value.serde: invalid value %q: allowed values are "string", "bytes", "json", "long", "integer", "double"`, name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %s", name, err, want)
		}
	}
}

// A file that is not there names the closest file beside it, when one looks meant.
func TestMissingFileNamesTheClosest(t *testing.T) {
	dir := tempDir(t)
	_, err := Parse([]byte("[agent]\nscripts = [\"wx.lua\"]\n"+baseStreams), dir, "agent.toml")
	want := fmt.Sprintf("agent.toml:2: agent.scripts: cannot use %s: no such file or directory; did you mean %s?",
		filepath.Join(dir, "wx.lua"), filepath.Join(dir, "wc.lua"))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v\nwant %s", err, want)
	}
	_, err = Parse([]byte("[agent]\nscripts = [\"pipeline.lua\"]\n"+baseStreams), dir, "agent.toml")
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Fatalf("error %v, want no suggestion", err)
	}
}
