package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/agent/query"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// Run starts everything, processes until ctx is cancelled (SIGTERM/SIGINT) or an error
// stops the application, then shuts down within agent.shutdown.timeout.
func (a *Agent) Run(ctx context.Context) (err error) {
	cfg := a.cfg
	if err := a.http.Start(); err != nil {
		return err
	}
	if cfg.ApplicationServer == "" && wildcardListen(cfg.HTTPListen) {
		a.log.Warn("agent.http.listen is a wildcard address and application.server is unset: no client can reach the agent "+
			"at that address, so key metadata (/v1/metadata) answers activeHost "+query.UnavailableHost+", as Kafka Streams does; "+
			"set application.server to the host:port others reach this agent at", "listen", cfg.HTTPListen)
	}
	close(a.ready)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if herr := a.http.Shutdown(sctx); herr != nil {
			a.log.Warn("http shutdown", "err", herr)
		}
	}()

	appDir := filepath.Join(cfg.StateDir, cfg.ApplicationID)
	lock, err := lockStateDir(appDir)
	if err != nil {
		return a.fail(err)
	}
	defer lock.Close()
	if a.streamsGroup() {
		if a.processID, err = a.keepProcessID(appDir); err != nil {
			return a.fail(err)
		}
	}

	stopRegistry, err := a.startSchemaRegistry()
	if err != nil {
		return a.fail(err)
	}
	defer stopRegistry()
	rt, builder, err := loadTopology(cfg, a.schemas, a.log, a.opts.Stdout, a.onLuaError)
	if err != nil {
		return a.fail(err)
	}
	a.zeroLuaErrors(rt)
	// The loop's first worker takes rt over, and closes it; until then it is Run's.
	defer func() {
		if rt != nil {
			rt.Close()
		}
	}()
	defer a.discardStaged()
	feeder, err := demoFeeder(cfg, builder)
	if err != nil {
		return a.fail(err)
	}
	a.serveTopology(builder)
	a.setReloadBase(builder)
	a.serveClose()
	a.serveReload()
	a.serveQueries()
	a.serveConsole()

	k := &kafkaClients{}
	defer func() { k.close(a.closer.leaveGroup(cfg.LeaveGroupOnClose), a.log) }()
	if err := a.connect(ctx, k, builder); err != nil {
		return a.fail(err)
	}

	// A corrupt state database is replaced while running (the loop rebuilds it): db is
	// the one open when Run returns.
	dbDir := filepath.Join(appDir, "db")
	if k.embedded != nil {
		if err := a.forgetEmbeddedState(dbDir); err != nil {
			return a.fail(err)
		}
	}
	var db *state.DB
	if len(builder.Stores()) > 0 {
		if db, err = a.openRestoredState(ctx, dbDir, builder, k); err != nil {
			return a.fail(err)
		}
		defer func() {
			if db != nil {
				db.Close()
			}
		}()
	}
	global := map[string]bool{}
	for _, g := range builder.GlobalStores() {
		global[g.Store] = true
	}
	a.stores.Store(&query.Catalog{DB: db, Specs: builder.Stores(), Partitions: k.maxPartitions(), Global: global})
	defer a.stores.Store(nil)
	opts := a.topologyOptions(k)
	globals, err := a.globalStoresOf(k, builder)
	if err != nil {
		return a.fail(err)
	}

	l := newLoop(a, k, db, builder)
	l.stateDir, l.bootGlobals = dbDir, globals.boot
	l.opts, l.globals = opts, globals
	err = l.startWorkers(cfg, rt, builder)
	rt = nil
	if err != nil {
		return a.fail(err)
	}
	defer l.stopWorkers()
	err = l.startTopology(ctx)
	db = l.db
	if err != nil {
		return a.fail(err)
	}
	consumerCfg, err := kafkaio.SaramaConfig(cfg, kafkaio.RoleConsumer)
	if err != nil {
		return a.fail(err)
	}
	maxPoll := int(config.MaxPollRecords.Get(cfg.Client(config.ForConsumer)))
	var consumer *kafkaio.Consumer
	if k.member != nil {
		consumer, err = kafkaio.NewStreamsConsumer(k.brokers, k.member, k.subscription, k.tasks, consumerCfg, maxPoll, l)
	} else {
		k.group = a.activeStrategy()
		k.group.Use(consumerCfg)
		consumer, err = kafkaio.NewConsumer(k.brokers, cfg.ApplicationID, k.subscription, consumerCfg, maxPoll, l)
	}
	if err != nil {
		return a.fail(fmt.Errorf("consumer: %w", err))
	}
	consumer.SetOffsetReset(func(topic string) pipeline.OffsetReset {
		if k.internal[topic] {
			// Kafka Streams reads its internal topics from the earliest offset.
			return pipeline.OffsetReset{Strategy: pipeline.ResetEarliest}
		}
		if r := builder.OffsetResetOf(topic); r.Strategy != pipeline.ResetDefault {
			return r
		}
		return cfg.AutoOffsetReset
	})
	k.consumer = consumer
	if err := a.state.Transition(StateRebalancing); err != nil {
		return err
	}
	runCtx, cancelRun := context.WithCancel(context.Background())
	defer cancelRun()
	consumer.Start(runCtx)
	go func() {
		if err := sdRunWatchdog(runCtx, a.watchdogHealthy, a.log); err != nil {
			a.log.Warn("systemd watchdog", "err", err)
		}
	}()
	go a.monitorBrokers(runCtx, k.brokers, k.adminCfg)
	if feeder != nil {
		go a.runDemoFeeder(runCtx, k.brokers, *feeder)
	}
	loopCtx, stopLoop := a.closer.context(ctx)
	defer stopLoop()
	loopErr := l.run(loopCtx)
	db = l.db
	a.notifySystemd(sdStopping)
	if loopErr != nil {
		return a.fail(loopErr)
	}
	if err := a.state.Transition(StatePendingShutdown); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		cancelRun()
		k.close(a.closer.leaveGroup(cfg.LeaveGroupOnClose), a.log)
		k.consumer, k.producer, k.embedded = nil, nil, nil
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(cfg.ShutdownTimeout):
		a.log.Warn("shutdown did not finish within agent.shutdown.timeout; exiting anyway", "timeout", cfg.ShutdownTimeout)
	}
	return a.state.Transition(StateNotRunning)
}

// logRunning says the application is up, once it first reaches RUNNING. Its sources are the
// named source topics and those subscribed to, which holds the ones patterns matched.
func (a *Agent) logRunning(b *pipeline.StreamsBuilder, subscribed []string) {
	sources := slices.Concat(b.SourceTopics(), subscribed)
	slices.Sort(sources)
	a.log.Info("StoatFlow is running",
		"application.id", a.cfg.ApplicationID,
		"sources", slices.Compact(sources),
		"sinks", b.SinkTopics(),
		"metrics", "http://"+a.http.Addr()+"/metrics",
		"next", "edit the scripts and reload (SIGHUP or POST /-/reload); the README lists what to read next")
}

// fail moves the application to ERROR (through PENDING_ERROR) and returns err.
func (a *Agent) fail(err error) error {
	cur := a.state.Current()
	if cur == StateCreated {
		// Kafka Streams has no CREATED → ERROR edge: a start-up failure goes through
		// PENDING_SHUTDOWN to NOT_RUNNING, and the error is returned.
		_ = a.state.Transition(StatePendingShutdown)
		_ = a.state.Transition(StateNotRunning)
		return err
	}
	_ = a.state.Transition(StatePendingError)
	_ = a.state.Transition(StateError)
	return err
}

// connect starts the embedded broker when asked, checks or creates topics, and opens the
// producer.
func (a *Agent) connect(ctx context.Context, k *kafkaClients, b *pipeline.StreamsBuilder) error {
	cfg := a.cfg
	k.brokers = cfg.BootstrapServers
	if cfg.Embedded {
		emb, err := kafkaio.StartEmbedded(cfg.EmbeddedListen, a.log)
		if err != nil {
			return fmt.Errorf("embedded broker: %w", err)
		}
		k.embedded = emb
		k.brokers = emb.Addrs()
		a.log.Warn("using the embedded in-process broker: it keeps everything in memory and nothing on disk; it is for trying and testing only",
			"listen", k.brokers[0])
	}
	adminCfg, err := kafkaio.SaramaConfig(cfg, kafkaio.RoleAdmin)
	if err != nil {
		return err
	}
	if err := a.waitForBrokers(ctx, k.brokers, adminCfg); err != nil {
		return err
	}
	k.adminCfg = adminCfg
	if k.embedded != nil {
		topics := map[string]kafkaio.TopicSpec{}
		for _, t := range append(b.SourceTopics(), b.SinkTopics()...) {
			topics[t] = kafkaio.TopicSpec{Partitions: cfg.EmbeddedPartitions, ReplicationFactor: -1}
		}
		if err := kafkaio.EnsureTopics(k.brokers, adminCfg, topics); err != nil {
			return err
		}
	}
	k.subscription = b.SourceTopics()
	if b.HasPatternSources() {
		all, err := kafkaio.ListTopics(k.brokers, adminCfg)
		if err != nil {
			return err
		}
		if k.subscription, err = b.Subscription(all); err != nil {
			return err
		}
	}
	counts, err := kafkaio.PartitionCounts(k.brokers, adminCfg, k.subscription)
	if err != nil {
		return err
	}
	var missing []string
	for _, t := range b.SourceTopics() {
		if counts[t] == 0 {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("source topics do not exist: %v (Kafka Streams' MissingSourceTopicException; create them first)", missing)
	}
	if len(k.subscription) == 0 {
		return fmt.Errorf("no topic matches the source patterns yet: create one first (Kafka Streams would wait for it with no tasks)")
	}
	k.sourcePartitions = counts
	if a.streamsGroup() {
		// The group's coordinator makes the internal topics from the declared topology.
		if err := a.joinStreamsGroup(ctx, k, b); err != nil {
			return err
		}
	}
	if a.repartitionTopics {
		if err := a.subscribeInternal(k, b); err != nil {
			return err
		}
	}
	if k.member == nil {
		if err := a.ensureChangelogs(k, b); err != nil {
			return err
		}
	}
	producerCfg, err := kafkaio.SaramaConfig(cfg, kafkaio.RoleProducer)
	if err != nil {
		return err
	}
	if cfg.ExactlyOnce() {
		kafkaio.MakeTransactional(producerCfg, cfg, a.processID)
	}
	if k.producer, err = kafkaio.NewProducerWith(k.brokers, producerCfg, kafkaio.ProducerLimitsFor(cfg)); err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	k.producer.OnAck = a.countProduced(b)
	return nil
}

// countProduced counts acknowledged records per sink topic, leaving changelogs out as the
// metric's help says. It runs as the producer's OnAck, whose calls never overlap, so its
// cache of counters (one label lookup per topic, not per record) needs no lock.
func (a *Agent) countProduced(b *pipeline.StreamsBuilder) func(topic string) {
	changelogs := map[string]bool{}
	for _, s := range b.Stores() {
		if s.Logged {
			changelogs[pipeline.ChangelogTopic(a.cfg.ApplicationID, s.Name)] = true
		}
	}
	counters := map[string]prometheus.Counter{}
	return func(topic string) {
		c, seen := counters[topic]
		if !seen {
			if !changelogs[topic] {
				c = a.metrics.RecordsProduced.WithLabelValues(topic)
			}
			counters[topic] = c
		}
		if c != nil {
			c.Inc()
		}
	}
}

// topologyOptions are what the workers' topologies share. When some tasks may run on other
// agents (a streams group), re-keyed records go through the repartition topics
// (repartition.go), and each task closes its windows on its own time, as Kafka Streams does:
// the agent sees only its own tasks' partitions, so a watermark over them would close
// windows on the times of whichever tasks it holds.
func (a *Agent) topologyOptions(k *kafkaClients) pipeline.TopologyOptions {
	return pipeline.TopologyOptions{
		Collector:         k.producer,
		Sensors:           metricSensors{a.metrics},
		SourcePartitions:  k.sourcePartitions,
		ApplicationID:     a.cfg.ApplicationID,
		CacheMaxBytes:     a.cfg.CacheMaxBytes,
		RepartitionTopics: a.repartitionTopics,
		TaskTime:          a.taskTime,
	}
}
