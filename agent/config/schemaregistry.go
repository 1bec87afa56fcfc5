package config

import (
	"net/url"
	"slices"
	"strings"
	"time"
)

// SchemaRegistry is what the Schema Registry serdes (avro, protobuf, json-schema) use:
// Confluent's serde keys, set under [streams] as a Kafka Streams application passes them to
// its serdes.
type SchemaRegistry struct {
	// URLs are the registry's base URLs; empty when no registry is configured.
	URLs []string
	// Embedded is schema.registry.url = "embedded": an in-process registry on
	// EmbeddedListen (agent.embedded.schema.registry.listen).
	Embedded       bool
	EmbeddedListen string
	// User and Password come from basic.auth.user.info under basic.auth.credentials.source
	// USER_INFO, from the URLs' user:password@ under URL (URLs hold none then).
	User, Password string
	// Token is bearer.auth.token; LogicalCluster and IdentityPoolID are sent as Confluent
	// Cloud's target-sr-cluster and Confluent-Identity-Pool-Id headers.
	Token, LogicalCluster, IdentityPoolID string
	AutoRegister, UseLatestVersion        bool
	// KeyStrategy and ValueStrategy are the short names of the subject name strategies.
	KeyStrategy, ValueStrategy string
	// TrustStore and KeyStore are PEM files for TLS to the registry.
	TrustStore, KeyStore        string
	MaxRetries                  int
	RetryWait, RetryMaxWait     time.Duration
	ConnectTimeout, ReadTimeout time.Duration
	// MaxResponseBytes is agent.schema.registry.max.response.bytes.
	MaxResponseBytes int64
}

var strategyAliases = map[string]string{
	"io.confluent.kafka.serializers.subject.TopicNameStrategy":       "TopicNameStrategy",
	"io.confluent.kafka.serializers.subject.RecordNameStrategy":      "RecordNameStrategy",
	"io.confluent.kafka.serializers.subject.TopicRecordNameStrategy": "TopicRecordNameStrategy",
}

var strategies = []string{"TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy"}

// registryKeys are the Confluent serde and Schema Registry client keys StoatFlow reads.
var registryKeys = keyTable{section: SectionStreams}

var (
	// Secret: with basic.auth.credentials.source = URL the URLs carry user:password@.
	registryURL = declare[[]string](&registryKeys, Key{Name: "schema.registry.url", Type: TypeList, Secret: true,
		Doc: `Schema Registry URLs for the avro, protobuf and json-schema serdes (tried in order); "embedded" starts an in-process registry on agent.embedded.schema.registry.listen. Credentials in a URL (user:password@) are sent as basic auth with basic.auth.credentials.source = URL, and taken out of the URL the agent shows.`})
	basicAuthCredentialsSource = declare[string](&registryKeys, Key{Name: "basic.auth.credentials.source", Type: TypeEnum, Default: "URL", Allowed: []string{"URL", "USER_INFO"},
		Refuse: map[string]string{"SASL_INHERIT": "StoatFlow does not pass its Kafka SASL credentials to the registry; set basic.auth.user.info"},
		Doc:    "Where the registry's basic-auth credentials come from: URL (user:password@ in schema.registry.url) or USER_INFO (basic.auth.user.info)."})
	basicAuthUserInfo = declare[string](&registryKeys, Key{Name: "basic.auth.user.info", Type: TypeString, Secret: true,
		Doc: "Basic-auth credentials as user:password, with basic.auth.credentials.source = USER_INFO."})
	_ = registryKeys.add(Key{Name: "bearer.auth.credentials.source", Type: TypeEnum, Default: "STATIC_TOKEN", Allowed: []string{"STATIC_TOKEN"},
		Refuse: map[string]string{
			"OAUTHBEARER":              "not supported yet: fetching OAuth tokens for the registry; set a token in bearer.auth.token",
			"SASL_OAUTHBEARER_INHERIT": "not supported yet: OAuth tokens for the registry; set a token in bearer.auth.token",
			"CUSTOM":                   "a Java class; set a token in bearer.auth.token",
		},
		Doc: "Where the registry's bearer token comes from: STATIC_TOKEN (bearer.auth.token)."})
	bearerAuthToken = declare[string](&registryKeys, Key{Name: "bearer.auth.token", Type: TypeString, Secret: true,
		Doc: "Bearer token sent to the registry; empty means none."})
	bearerAuthLogicalCluster = declare[string](&registryKeys, Key{Name: "bearer.auth.logical.cluster", Type: TypeString,
		Doc: "Confluent Cloud's logical cluster of the registry (the target-sr-cluster header)."})
	bearerAuthIdentityPoolID = declare[string](&registryKeys, Key{Name: "bearer.auth.identity.pool.id", Type: TypeString,
		Doc: "Confluent Cloud's identity pool (the Confluent-Identity-Pool-Id header)."})
	autoRegisterSchemas = declare[bool](&registryKeys, Key{Name: "auto.register.schemas", Type: TypeBool, Default: "true",
		Doc: "Register a serde's local schema under its subject on first use; false looks it up and fails when it is not registered."})
	useLatestVersion = declare[bool](&registryKeys, Key{Name: "use.latest.version", Type: TypeBool, Default: "false",
		Doc: "Write with the latest schema registered under the subject instead of the serde's local schema."})
	keySubjectNameStrategy = declare[string](&registryKeys, Key{Name: "key.subject.name.strategy", Type: TypeClass, Default: "TopicNameStrategy", Allowed: strategies, Aliases: strategyAliases,
		Doc: "Subject of key schemas: TopicNameStrategy (<topic>-key), RecordNameStrategy (the record's full name) or TopicRecordNameStrategy (<topic>-<record>)."})
	valueSubjectNameStrategy = declare[string](&registryKeys, Key{Name: "value.subject.name.strategy", Type: TypeClass, Default: "TopicNameStrategy", Allowed: strategies, Aliases: strategyAliases,
		Doc: "Subject of value schemas: TopicNameStrategy (<topic>-value), RecordNameStrategy or TopicRecordNameStrategy."})
	registryTrustStore = declare[string](&registryKeys, Key{Name: "schema.registry.ssl.truststore.location", Type: TypeString, Path: true,
		Doc: "PEM file of the CA certificates that sign the registry's certificate; unset = the system roots."})
	registryKeyStore = declare[string](&registryKeys, Key{Name: "schema.registry.ssl.keystore.location", Type: TypeString, Path: true,
		Doc: "PEM file holding a client certificate chain and its unencrypted key, for TLS client authentication to the registry."})
	registryMaxRetries = declare[int64](&registryKeys, Key{Name: "max.retries", Type: TypeInt, Default: "3", Min: 0, Max: 100,
		MaxReason: "every retry waits up to retries.max.wait.ms while the record waits; fix the registry instead",
		Doc:       "Retries of a registry request that failed transiently (no answer, 408, 429, 5xx); then the record fails."})
	registryRetryWait = declare[time.Duration](&registryKeys, Key{Name: "retries.wait.ms", Type: TypeDuration, Default: "1000",
		Doc: "Wait before the first retry of a registry request; each further wait doubles."})
	registryRetryMaxWait = declare[time.Duration](&registryKeys, Key{Name: "retries.max.wait.ms", Type: TypeDuration, Default: "20000",
		Doc: "Longest wait between retries of a registry request."})
	registryConnectTimeout = declare[time.Duration](&registryKeys, Key{Name: "http.connect.timeout.ms", Type: TypeDuration, Default: "60000", Min: 1,
		Doc: "Time to connect to the registry, per attempt."})
	registryReadTimeout = declare[time.Duration](&registryKeys, Key{Name: "http.read.timeout.ms", Type: TypeDuration, Default: "60000", Min: 1,
		Doc: "Time the registry has to answer, per attempt."})
)

// registryAgentKeys are the [agent] keys of the Schema Registry; the docs list them after
// agentKeys.
var registryAgentKeys = keyTable{section: SectionAgent}

var (
	embeddedRegistryListen = declare[string](&registryAgentKeys, Key{Name: "embedded.schema.registry.listen", Type: TypeString, Default: "127.0.0.1:0",
		Doc: `Address of the in-process Schema Registry used when schema.registry.url = "embedded" (port 0 picks a free port).`})
	registryMaxResponseBytes = declare[int64](&registryAgentKeys, Key{Name: "schema.registry.max.response.bytes", Type: TypeLong, Default: "8388608", Min: 1024,
		Doc: "Largest answer read from the Schema Registry (a schema with its references); a larger one fails the call unread, as a broken or hostile registry's would fill the agent's memory."})
)

func (b *builder) buildSchemaRegistry() {
	c, r := b.cfg, &b.cfg.SchemaRegistry
	r.URLs = registryURL.Get(c)
	r.EmbeddedListen = embeddedRegistryListen.Get(c)
	r.MaxResponseBytes = registryMaxResponseBytes.Get(c)
	r.AutoRegister = autoRegisterSchemas.Get(c)
	r.UseLatestVersion = useLatestVersion.Get(c)
	r.KeyStrategy = keySubjectNameStrategy.Get(c)
	r.ValueStrategy = valueSubjectNameStrategy.Get(c)
	r.Token = bearerAuthToken.Get(c)
	r.LogicalCluster = bearerAuthLogicalCluster.Get(c)
	r.IdentityPoolID = bearerAuthIdentityPoolID.Get(c)
	r.TrustStore = registryTrustStore.Get(c)
	r.KeyStore = registryKeyStore.Get(c)
	r.MaxRetries = int(registryMaxRetries.Get(c))
	r.RetryWait = registryRetryWait.Get(c)
	r.RetryMaxWait = registryRetryMaxWait.Get(c)
	r.ConnectTimeout = registryConnectTimeout.Get(c)
	r.ReadTimeout = registryReadTimeout.Get(c)
	b.checkHostPort(embeddedRegistryListen.FullName(), r.EmbeddedListen, false)

	urlKey := registryURL.FullName()
	r.Embedded = len(r.URLs) == 1 && r.URLs[0] == "embedded"
	var fromURL *url.Userinfo
	if !r.Embedded {
		r.URLs = slices.Clone(r.URLs)
		for i, u := range r.URLs {
			if u == "embedded" {
				b.fail(KindInvalid, urlKey, `"embedded" cannot be combined with other URLs`)
				continue
			}
			p, err := url.Parse(u)
			if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
				b.fail(KindInvalid, urlKey, "invalid value %s: expected an http:// or https:// URL", redactURL(u))
				continue
			}
			// Credentials leave the URL (basic.auth.credentials.source = URL sends them as
			// basic auth): a URL is shown in errors and logs, and must not carry a password.
			if p.User != nil {
				if fromURL != nil && fromURL.String() != p.User.String() {
					b.fail(KindInvalid, urlKey, "the URLs carry different credentials (user:password@): the registry's URLs are one registry, with one set")
				}
				fromURL = p.User
				p.User = nil
				r.URLs[i] = p.String()
			}
		}
	}
	if basicAuthCredentialsSource.Get(c) == "URL" && fromURL != nil {
		r.User = fromURL.Username()
		r.Password, _ = fromURL.Password()
	}
	if basicAuthCredentialsSource.Get(c) == "USER_INFO" {
		user, pass, ok := strings.Cut(basicAuthUserInfo.Get(c), ":")
		if !ok {
			kind := KindInvalid
			if !basicAuthUserInfo.IsSet(c) {
				kind = KindMissing
			}
			b.fail(kind, basicAuthUserInfo.FullName(), "required with basic.auth.credentials.source = USER_INFO, as user:password")
		}
		r.User, r.Password = user, pass
	} else if basicAuthUserInfo.IsSet(c) {
		b.fail(KindInvalid, basicAuthUserInfo.FullName(), "set, but basic.auth.credentials.source is URL: set it to USER_INFO to send these credentials")
	}
	if len(r.URLs) == 0 {
		for _, k := range registryKeys.keys {
			if k != registryURL.Key() && c.isSet(k.full) {
				b.fail(KindInvalid, k.full, "set without schema.registry.url")
			}
		}
	}
	if !b.partial {
		b.checkFile(registryTrustStore.FullName(), r.TrustStore, MaxPEMBytes)
		b.checkFile(registryKeyStore.FullName(), r.KeyStore, MaxPEMBytes)
	}
}
