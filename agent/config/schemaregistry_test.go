package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSchemaRegistryDefaults(t *testing.T) {
	r := mustParse(t, "", `schema.registry.url = "http://sr:8081"`).SchemaRegistry
	want := SchemaRegistry{
		URLs: []string{"http://sr:8081"}, EmbeddedListen: "127.0.0.1:0", AutoRegister: true,
		KeyStrategy: "TopicNameStrategy", ValueStrategy: "TopicNameStrategy",
		MaxRetries: 3, RetryWait: time.Second, RetryMaxWait: 20 * time.Second,
		ConnectTimeout: time.Minute, ReadTimeout: time.Minute, MaxResponseBytes: 8 << 20,
	}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("got  %+v\nwant %+v", r, want)
	}
	if r := mustParse(t, "", "").SchemaRegistry; len(r.URLs) != 0 || r.Embedded {
		t.Fatalf("no registry configured: %+v", r)
	}
}

func TestSchemaRegistryValues(t *testing.T) {
	r := mustParse(t, `embedded.schema.registry.listen = "127.0.0.1:8081"`, `schema.registry.url = "embedded"
basic.auth.credentials.source = "USER_INFO"
basic.auth.user.info = "ada:pa:ss"
bearer.auth.token = "t"
bearer.auth.logical.cluster = "lsrc-1"
auto.register.schemas = false
use.latest.version = "true"
value.subject.name.strategy = "io.confluent.kafka.serializers.subject.RecordNameStrategy"
key.subject.name.strategy = "topicrecordnamestrategy"
max.retries = 0
"retries.wait.ms" = "250ms"`).SchemaRegistry
	if !r.Embedded || r.EmbeddedListen != "127.0.0.1:8081" || r.User != "ada" || r.Password != "pa:ss" || r.Token != "t" ||
		r.LogicalCluster != "lsrc-1" || r.AutoRegister || !r.UseLatestVersion || r.ValueStrategy != "RecordNameStrategy" ||
		r.KeyStrategy != "TopicRecordNameStrategy" || r.MaxRetries != 0 || r.RetryWait != 250*time.Millisecond {
		t.Fatalf("got %+v", r)
	}
}

func TestSchemaRegistryProblems(t *testing.T) {
	for _, c := range []struct {
		streams, want string
		kind          Kind
	}{
		{`schema.registry.url = ["embedded", "http://sr:8081"]`, `streams.schema.registry.url: "embedded" cannot be combined with other URLs`, KindInvalid},
		// The key is secret (a URL may carry a password), and "ada:password" parses as a URL.
		{`schema.registry.url = "sr:8081"`, `streams.schema.registry.url: invalid value (not shown: the key is secret): expected an http:// or https:// URL`, KindInvalid},
		{`schema.registry.url = "ftp://ada:pw@sr"`, `streams.schema.registry.url: invalid value "ftp://ada:xxxxx@sr": expected an http:// or https:// URL`, KindInvalid},
		{"schema.registry.url = \"http://sr\"\nbasic.auth.credentials.source = \"USER_INFO\"", "streams.basic.auth.user.info: required with basic.auth.credentials.source = USER_INFO", KindMissing},
		{"schema.registry.url = \"http://sr\"\nbasic.auth.credentials.source = \"USER_INFO\"\nbasic.auth.user.info = \"ada\"", "streams.basic.auth.user.info: required with basic.auth.credentials.source = USER_INFO, as user:password", KindInvalid},
		{"schema.registry.url = \"http://sr\"\nbasic.auth.user.info = \"a:b\"", "streams.basic.auth.user.info: set, but basic.auth.credentials.source is URL", KindInvalid},
		{"schema.registry.url = \"http://sr\"\nbasic.auth.credentials.source = \"SASL_INHERIT\"", "does not pass its Kafka SASL credentials", KindRefused},
		{"schema.registry.url = \"http://sr\"\nbearer.auth.credentials.source = \"OAUTHBEARER\"", "not supported yet: fetching OAuth tokens", KindUnsupported},
		{`use.latest.version = true`, "streams.use.latest.version: set without schema.registry.url", KindInvalid},
		{"schema.registry.url = \"http://sr\"\nvalue.subject.name.strategy = \"Mine\"", "streams.value.subject.name.strategy", KindInvalid},
		{"schema.registry.url = \"https://sr\"\nschema.registry.ssl.truststore.location = \"missing.pem\"", "streams.schema.registry.ssl.truststore.location: cannot use", KindInvalid},
	} {
		_, err := parse(t, "", c.streams)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %q", c.streams, err, c.want)
			continue
		}
		wantKind(t, err, c.want, c.kind)
	}
}
