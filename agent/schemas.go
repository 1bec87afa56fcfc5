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
	a.schemas = schemas.NewFactory(schemaConfig(r, cl, opts.Bound()))
	return stop, nil
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
