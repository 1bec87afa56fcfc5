// Package agent runs one StoatFlow application: config → Lua topology → Kafka I/O → commit
// loop, plus the HTTP server, signals, systemd notification and the application states.
package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/console"
	"github.com/stoatflow/stoatflow/agent/demo"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/agent/query"
	"github.com/stoatflow/stoatflow/agent/schemaregistry"
	"github.com/stoatflow/stoatflow/luart"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
	"github.com/stoatflow/stoatflow/state"
)

// Options are what the agent takes besides its config.
type Options struct {
	Logger  *slog.Logger
	Stdout  io.Writer // KStream:print() output
	Version string
	// Metrics, when set, is used instead of a fresh registry (tests read it).
	Metrics *metrics.Metrics
	// LogLevel, when set, is the logger's level: a reload sets it to agent.log.level.
	LogLevel *slog.LevelVar
	// State is the state database's options, but for its read cache, which the agent
	// sizes: fault-injection tests wrap its storage with it.
	State state.Options
}

// Agent is one running application.
type Agent struct {
	cfg     *config.Config
	opts    Options
	log     *slog.Logger
	metrics *metrics.Metrics
	state   *StateMachine
	http    *HTTPServer
	ready   chan struct{} // closed once the HTTP listener is bound
	// stores is what interactive queries read; nil until the stores are restored.
	stores atomic.Pointer[query.Catalog]
	closer *closer
	reload *reloader
	// topology is what GET /topology and /topology/ks serve; a reload replaces it.
	topology atomic.Pointer[topologyView]
	// repartitionTopics sends re-keyed records through the repartition topics instead of
	// the workers' exchange (repartition.go), as the agents of a streams group must: set
	// with group.protocol = "streams", and by tests.
	repartitionTopics bool
	// taskTime closes each task's windows on its own time instead of on the global
	// watermark (pipeline.TopologyOptions.TaskTime): set with group.protocol = "streams".
	taskTime bool
	// held are the active tasks the agent runs in its streams group, as the loop last took
	// them; nil in a classic group, where the agent runs every task.
	held atomic.Pointer[heldTasks]
	// endpoints is where the agent reads which agent of its streams group runs each store
	// partition, for interactive queries; nil in a classic group.
	endpoints atomic.Pointer[endpointSource]
	// processID names the agent in its streams group, kept in its state directory
	// (processid.go); "" in a classic group.
	processID string
	// schemas makes the Schema Registry serdes of the running scripts; nil without a registry.
	schemas *schemas.Factory
	// registryURL is the embedded schema registry's URL, once it runs.
	registryURL string
	// registryWait is the start of the oldest Schema Registry call in progress (Unix
	// nanoseconds; 0: none).
	registryWait atomic.Int64
	// progress is the processing loop's heartbeat, workerProgress its workers', which the
	// systemd watchdog follows.
	progress       loopProgress
	workerProgress workerProgresses

	// What the console shows (agent/console): the last warnings and errors, the restore in
	// progress, the engine's time as the loop last published it, and the live taps.
	recent   *console.RecentLog
	restores *console.RestoreProgress
	time     atomic.Pointer[console.TimeStatus]
	// tasks says which worker runs each task (by task id), as the loop last assigned them.
	tasks atomic.Pointer[map[string]int]
	// appTasks are the application's tasks, as the loop last built the topology;
	// taskLags the lag of each task the agent runs, as of the latest epoch (taskassignment.go).
	appTasks atomic.Pointer[appTasks]
	taskLags atomic.Pointer[map[pipeline.TaskID]int64]
	taps     *console.Taps
	// group is the agent's role in its latest generation (standby.go); nil before the first.
	group atomic.Pointer[kafkaio.GroupRole]
	// copies are, while a warm standby follows the changelogs, the store partitions it
	// follows and how far each trails, as of its latest round (standby.go); nil otherwise.
	copies atomic.Pointer[map[state.ChangelogPartition]query.LagInfo]
}

// New prepares an agent; nothing is started until Run.
func New(cfg *config.Config, opts Options) (*Agent, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	m := opts.Metrics
	if m == nil {
		m = metrics.New()
	}
	zeroDropReasons(m)
	recent := console.NewRecentLog(opts.Logger.Handler(), recentLogEntries)
	a := &Agent{cfg: cfg, opts: opts, repartitionTopics: cfg.GroupProtocol == "streams", taskTime: cfg.GroupProtocol == "streams", log: slog.New(recent), metrics: m, ready: make(chan struct{}), closer: newCloser(), reload: newReloader(),
		recent: recent, restores: &console.RestoreProgress{}, taps: console.NewTaps(cfg.TapRecordsPerSecond, cfg.TapMaxClients)}
	gauge := StateGauge(m.AppState)
	a.state = NewStateMachine(func(old, new AppState) {
		gauge(old, new)
		a.log.Info("state transition", "from", old.String(), "to", new.String())
	})
	hosts := cfg.HTTPAllowedHosts
	if host, _, err := net.SplitHostPort(cfg.ApplicationServer); err == nil {
		hosts = append(slices.Clip(hosts), strings.ToLower(host))
	}
	srv, err := NewHTTPServer(HTTPOptions{
		Listen: cfg.HTTPListen, Token: cfg.HTTPToken, TLSCert: cfg.HTTPTLSCert, TLSKey: cfg.HTTPTLSKey,
		AllowedHosts: hosts, AllowUnauthenticated: cfg.HTTPAllowUnauthenticated, MetricsUnauthenticated: cfg.HTTPMetricsUnauthenticated,
	}, a.state, m, a.log)
	if err != nil {
		return nil, err
	}
	srv.ReportRestore(a.restores)
	srv.ReportActive(a.activeMember)
	srv.ReportActiveHosts(a.activeHosts)
	srv.ReportStall(a.registryStall)
	a.http = srv
	return a, nil
}

// recentLogEntries is how many of the last warnings and errors the console shows.
const recentLogEntries = 50

// State is the application's current state.
func (a *Agent) State() AppState { return a.state.Current() }

// WaitState blocks until the application is in one of the given states.
func (a *Agent) WaitState(ctx context.Context, want ...AppState) (AppState, error) {
	return a.state.WaitFor(ctx, want...)
}

// HTTPAddr is the bound address of the HTTP listener; it blocks until Run has bound it.
func (a *Agent) HTTPAddr(ctx context.Context) (string, error) {
	select {
	case <-a.ready:
		return a.http.Addr(), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// loadTopology loads the scripts into a fresh Lua runtime; sf makes their Schema Registry serdes.
func loadTopology(cfg *config.Config, sf *schemas.Factory, logger *slog.Logger, stdout io.Writer, onErr func(string)) (*luart.Runtime, *pipeline.StreamsBuilder, error) {
	if len(cfg.Scripts) == 0 {
		return nil, nil, errors.New("agent.scripts: no script configured")
	}
	rt, err := luart.New(luart.Options{
		CallTimeout:       cfg.LuaCallTimeout,
		MemoryLimit:       cfg.LuaMemoryMaxBytes,
		DefaultKeySerde:   cfg.DefaultKeySerde,
		DefaultValueSerde: cfg.DefaultValueSerde,
		WindowSize:        cfg.WindowSize.Milliseconds(),
		Logger:            logger,
		Stdout:            stdout,
		OnError:           onErr,
		Schemas:           sf,
	})
	if err != nil {
		return nil, nil, err
	}
	b, err := rt.LoadScripts(cfg.Scripts)
	if err != nil {
		rt.Close()
		return nil, nil, err
	}
	if err := checkChangelogNames(cfg.ApplicationID, b); err != nil {
		rt.Close()
		return nil, nil, err
	}
	return rt, b, nil
}

// checkChangelogNames refuses a changelog topic name longer than Kafka allows: the embedded
// broker would create it, a real one refuses it only when the agent first creates the topic.
func checkChangelogNames(appID string, b *pipeline.StreamsBuilder) error {
	for _, s := range b.Stores() {
		if !s.Logged {
			continue
		}
		if t := pipeline.ChangelogTopic(appID, s.Name); len(t) > maxTopicNameLength {
			return fmt.Errorf("streams.application.id: the changelog topic of store %q, %q, is %d characters long, more than Kafka's %d: shorten application.id or the store name",
				s.Name, t, len(t), maxTopicNameLength)
		}
	}
	return nil
}

// maxTopicNameLength is Kafka's limit on topic names.
const maxTopicNameLength = 249

// Validate loads the scripts and builds the topology without any broker. It returns the
// non-fatal warnings and the first error.
func Validate(cfg *config.Config) ([]string, error) {
	// The Kafka clients' TLS files and credentials are loaded as run loads them, so that
	// validate fails where run would (the HTTP key pair is loaded with the config).
	for _, role := range []kafkaio.Role{kafkaio.RoleConsumer, kafkaio.RoleProducer, kafkaio.RoleAdmin} {
		if _, err := kafkaio.SaramaConfig(cfg, role); err != nil {
			return nil, err
		}
	}
	if r := cfg.SchemaRegistry; r.TrustStore != "" || r.KeyStore != "" {
		if _, err := schemaregistry.TLSConfig(r.TrustStore, r.KeyStore); err != nil {
			return nil, err
		}
	}
	rt, b, err := loadTopology(cfg, offlineSchemas(cfg), nil, io.Discard, nil)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	if _, err := demoFeeder(cfg, b); err != nil {
		return rt.Warnings, err
	}
	if _, err := pipeline.NewDriver(b, pipeline.DriverOptions{Stores: pipeline.NewMemoryStores(), ApplicationID: cfg.ApplicationID}); err != nil {
		return rt.Warnings, err
	}
	return rt.Warnings, nil
}

// demoFeeder is the demo feeder agent.embedded.demo names, nil for none.
func demoFeeder(cfg *config.Config, b *pipeline.StreamsBuilder) (*demo.Feeder, error) {
	if cfg.EmbeddedDemo == "" {
		return nil, nil
	}
	read := b.SourceTopics()
	for _, g := range b.GlobalStores() {
		read = append(read, g.Topic)
	}
	f, err := demo.Lookup(cfg.EmbeddedDemo, read)
	if err != nil {
		return nil, err
	}
	return &f, nil
}

// NewLogger builds the slog logger from agent.log.* (flags override the config when set).
// The level variable it returns follows agent.log.level on reload; it is nil when the
// --log.level flag fixed the level.
func NewLogger(w io.Writer, cfg *config.Config, level, format string) (*slog.Logger, *slog.LevelVar, error) {
	var lvl slog.Leveler
	var follow *slog.LevelVar
	if level != "" {
		var fixed slog.Level
		if err := fixed.UnmarshalText([]byte(level)); err != nil {
			return nil, nil, fmt.Errorf("--log.level: %q is not one of debug, info, warn, error", level)
		}
		lvl = fixed
	} else {
		follow = new(slog.LevelVar)
		follow.Set(cfg.LogLevel)
		lvl = follow
	}
	if format == "" {
		format = cfg.LogFormat
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), follow, nil
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), follow, nil
	default:
		return nil, nil, fmt.Errorf("--log.format: %q is not one of text, json", format)
	}
}

// lockStateDir takes an exclusive lock on the application's state directory so that two
// agents (or an agent and `stoatflow reset`) never use it at once.
func lockStateDir(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("state.dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return nil, fmt.Errorf("state.dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("state directory %s is in use by another StoatFlow process", dir)
	}
	return f, nil
}

// ResetState deletes an application's state directory (Kafka Streams' cleanUp()); it refuses
// while an agent holds the directory.
func ResetState(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	lock, err := lockStateDir(dir)
	if err != nil {
		return err
	}
	defer lock.Close()
	if strings.TrimSpace(dir) == "" || dir == "/" {
		return fmt.Errorf("refusing to delete %q", dir)
	}
	return os.RemoveAll(dir)
}

// kafkaClients holds the Kafka side of a running agent.
type kafkaClients struct {
	brokers  []string
	adminCfg *kafkaio.Config // the admin client's config, for broker checks
	embedded *kafkaio.Embedded
	producer *kafkaio.Producer
	consumer *kafkaio.Consumer
	group    *kafkaio.ActiveStrategy // the consumer's, which says this agent's role (classic)
	// member is the agent's membership of its streams group, and tasks lists each task's
	// partitions (group.protocol = "streams", streamsgroup.go); nil in a classic group.
	member *kafkaio.StreamsMember
	tasks  func(kafkaio.TaskID) []pipeline.TopicPartition

	// subscription is the source topics read: the named ones and those a pattern matches.
	subscription     []string
	sourcePartitions map[string]int32
	// internal are the repartition topics in the subscription, when re-keyed records go
	// through them (repartition.go).
	internal map[string]bool
}

// maxPartitions is the largest source partition count: the number of tasks, and so of
// partitions of every store and changelog.
func (k *kafkaClients) maxPartitions() int32 {
	var n int32
	for _, p := range k.sourcePartitions {
		n = max(n, p)
	}
	return n
}

func (k *kafkaClients) close(leaveGroup bool, log *slog.Logger) {
	if k.consumer != nil {
		if err := k.consumer.Close(leaveGroup); err != nil {
			log.Warn("closing the consumer", "err", err)
		}
	}
	if err := k.closeMember(leaveGroup, 30*time.Second); err != nil {
		log.Warn("leaving the streams group", "err", err)
	}
	k.member = nil
	if k.producer != nil {
		if err := k.producer.Close(); err != nil {
			log.Warn("closing the producer", "err", err)
		}
	}
	if k.embedded != nil {
		k.embedded.Close()
	}
}

// notifySystemd sends a systemd notification, logging (not failing) when it cannot.
func (a *Agent) notifySystemd(state string) {
	if err := sdNotify(state); err != nil {
		a.log.Warn("systemd notify", "state", state, "err", err)
	}
}
