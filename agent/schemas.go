package agent

import (
	"time"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/schemaregistry"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// startSchemaRegistry prepares what the Schema Registry serdes use: the embedded registry
// when schema.registry.url = "embedded", and a client of the registry. The returned function
// stops the embedded registry.
func (a *Agent) startSchemaRegistry() (stop func(), err error) {
	r := a.cfg.SchemaRegistry
	stop = func() {}
	if len(r.URLs) == 0 {
		return stop, nil
	}
	urls := r.URLs
	if r.Embedded {
		e, err := schemaregistry.StartEmbedded(r.EmbeddedListen)
		if err != nil {
			return stop, err
		}
		stop = func() { _ = e.Close() }
		urls = []string{e.URL()}
		a.registryURL = e.URL()
		a.log.Warn("using the embedded in-process schema registry: it keeps schemas in memory only and checks no compatibility; it is for trying and testing only",
			"url", e.URL())
	}
	opts := schemaregistry.Options{
		URLs: urls, User: r.User, Password: r.Password, Token: r.Token, Headers: map[string]string{},
		MaxRetries: r.MaxRetries, RetryWait: r.RetryWait, RetryMaxWait: r.RetryMaxWait,
		ConnectTimeout: r.ConnectTimeout, ReadTimeout: r.ReadTimeout, Logger: a.log,
		MaxResponseBytes: r.MaxResponseBytes, OnWait: a.registryWaiting,
	}
	if r.LogicalCluster != "" {
		opts.Headers["target-sr-cluster"] = r.LogicalCluster
	}
	if r.IdentityPoolID != "" {
		opts.Headers["Confluent-Identity-Pool-Id"] = r.IdentityPoolID
	}
	if r.TrustStore != "" || r.KeyStore != "" {
		if opts.TLS, err = schemaregistry.TLSConfig(r.TrustStore, r.KeyStore); err != nil {
			stop()
			return func() {}, err
		}
	}
	cl, err := schemaregistry.NewClient(opts)
	if err != nil {
		stop()
		return func() {}, err
	}
	a.schemas = schemas.NewFactory(schemaConfig(r, cl, min(opts.Bound(), registryCallLimit(a.cfg))))
	return stop, nil
}

// registryCallLimit bounds one Schema Registry call, retries included, below what the
// processing loop may be held before Kafka gives up on it: half of transaction.timeout.ms
// under exactly-once (the producer would be fenced), half of max.poll.interval.ms under
// at-least-once (the consumer would leave the group). A record's schema is fetched while
// the loop waits; a registry slower than that fails the record (its deserialization or
// production handler decides) instead of the whole epoch.
func registryCallLimit(cfg *config.Config) time.Duration {
	if cfg.ExactlyOnce() {
		return config.TransactionTimeout.Get(cfg.Client(config.ForProducer)) / 2
	}
	return config.MaxPollInterval.Get(cfg.Client(config.ForConsumer)) / 2
}

// registryWaiting records the start of the oldest Schema Registry call in progress.
func (a *Agent) registryWaiting(oldest time.Time) {
	if oldest.IsZero() {
		a.registryWait.Store(0)
		a.metrics.RegistryCallStart.Set(0)
		return
	}
	a.registryWait.Store(oldest.UnixNano())
	a.metrics.RegistryCallStart.Set(float64(oldest.UnixNano()) / 1e9)
}

// registryStall is what processing waits on, for /readyz: the registry, since its oldest
// call in progress started.
func (a *Agent) registryStall() (string, time.Time) {
	if ns := a.registryWait.Load(); ns != 0 {
		return "schema registry", time.Unix(0, ns)
	}
	return "", time.Time{}
}

// offlineSchemas is the factory of commands that load the scripts without running them
// (validate, describe, reload checks): an in-memory registry, never asked, when a registry
// is configured; nil otherwise, so that naming a Schema Registry serde is an error.
func offlineSchemas(cfg *config.Config) *schemas.Factory {
	if len(cfg.SchemaRegistry.URLs) == 0 {
		return nil
	}
	return schemas.NewFactory(schemaConfig(cfg.SchemaRegistry, schemas.NewMemoryRegistry(), 0))
}

func schemaConfig(r config.SchemaRegistry, reg schemas.Registry, timeout time.Duration) schemas.Config {
	// The config accepts only the three strategies' names, which StrategyNamed knows.
	key, _ := schemas.StrategyNamed(r.KeyStrategy)
	value, _ := schemas.StrategyNamed(r.ValueStrategy)
	return schemas.Config{Registry: reg, AutoRegister: r.AutoRegister, UseLatestVersion: r.UseLatestVersion,
		KeyStrategy: key, ValueStrategy: value, Timeout: timeout}
}
