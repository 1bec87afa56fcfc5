package agent

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/query"
	"github.com/stoatflow/stoatflow/luart"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
)

// ErrReloadPending is Reload's answer while an earlier reload has not finished.
var ErrReloadPending = errors.New("a reload is already pending")

// errReloadNotRunning is Reload's answer before the running topology is loaded.
var errReloadNotRunning = errors.New("the agent has not loaded its topology yet")

// reloader carries a reload from SIGHUP or POST /-/reload to the processing loop.
type reloader struct {
	pending atomic.Bool
	// staged holds a compatible topology until the loop's next commit barrier.
	staged chan *reloadCandidate
	// base is what the running topology was built from; nil until Run loaded it.
	base atomic.Pointer[reloadBase]
}

func newReloader() *reloader { return &reloader{staged: make(chan *reloadCandidate, 1)} }

type reloadBase struct {
	cfg   *config.Config
	shape topologyShape
	// scripts (path → content digest) and topology (the description text) are what the
	// debug log of a reload compares.
	scripts  map[string][sha256.Size]byte
	topology string
}

func newReloadBase(cfg *config.Config, b *pipeline.StreamsBuilder) *reloadBase {
	return &reloadBase{cfg: cfg, shape: shapeOfBuilder(b), scripts: scriptDigests(cfg.Scripts), topology: b.Describe().String()}
}

// scriptDigests digests each script file; one that cannot be read has none.
func scriptDigests(paths []string) map[string][sha256.Size]byte {
	out := make(map[string][sha256.Size]byte, len(paths))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			out[p] = sha256.Sum256(data)
		}
	}
	return out
}

// logReloadDiff logs, at debug level, what a reload changes: the scripts whose contents
// differ, and the lines of the topology description that go and come.
func (a *Agent) logReloadDiff(base *reloadBase, next *reloadBase) {
	if !a.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	var changed []string
	for p, d := range next.scripts {
		if old, ok := base.scripts[p]; !ok || old != d {
			changed = append(changed, p)
		}
	}
	for p := range base.scripts {
		if _, ok := next.scripts[p]; !ok {
			changed = append(changed, p)
		}
	}
	sort.Strings(changed)
	removed, added := lineDiff(base.topology, next.topology)
	a.log.Debug("reload: what changes", "scripts changed", changed, "topology lines removed", removed, "topology lines added", added)
}

// lineDiff lists the lines of old that new lacks and the lines of new that old lacks,
// each as often as it is missing, in their order.
func lineDiff(old, new string) (removed, added []string) {
	count := map[string]int{}
	for _, l := range strings.Split(new, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(old, "\n") {
		if count[l] > 0 {
			count[l]--
		} else {
			removed = append(removed, strings.TrimSpace(l))
		}
	}
	for _, l := range strings.Split(new, "\n") {
		if count[l] > 0 {
			count[l]--
			added = append(added, strings.TrimSpace(l))
		}
	}
	return removed, added
}

// reloadCandidate is a new topology that passed the compatibility checks: the first
// worker's runtime and the builder its scripts filled in, and a runtime of its own for
// each other worker (num.stream.threads), loaded before the barrier it takes over at.
type reloadCandidate struct {
	cfg  *config.Config
	rt   *luart.Runtime
	b    *pipeline.StreamsBuilder
	more []workerRuntime
	base *reloadBase // what the running topology is built from once it takes over
}

// runtimes are the candidate's runtimes, worker 0's first.
func (c *reloadCandidate) runtimes() []workerRuntime {
	return append([]workerRuntime{{rt: c.rt, b: c.b}}, c.more...)
}

// close closes the candidate's runtimes.
func (c *reloadCandidate) close() {
	if c.rt != nil {
		c.rt.Close()
	}
	for _, r := range c.more {
		r.rt.Close()
	}
}

// Reload asks the agent to re-read its config file and scripts and, when the new
// topology is compatible, to swap it in at the next commit barrier. It returns at once;
// the outcome is logged and counted in stoatflow_app_reloads_total{result}.
func (a *Agent) Reload() error {
	if a.reload.base.Load() == nil {
		return errReloadNotRunning
	}
	if !a.reload.pending.CompareAndSwap(false, true) {
		return ErrReloadPending
	}
	a.log.Info("reload requested", "config", a.cfg.Path)
	go func() {
		c, err := a.prepareReload()
		if err != nil {
			a.reloadFailed(err)
			return
		}
		a.reload.staged <- c
		a.log.Info("reload: the new topology is compatible; it takes over at the next commit barrier")
	}()
	return nil
}

// setReloadBase records what the running topology was built from.
func (a *Agent) setReloadBase(b *pipeline.StreamsBuilder) {
	a.reload.base.Store(newReloadBase(a.cfg, b))
}

// prepareReload loads the config file and the scripts into a fresh Lua runtime and
// checks the result against the running topology.
func (a *Agent) prepareReload() (*reloadCandidate, error) {
	base := a.reload.base.Load()
	cfg, err := config.Load(a.cfg.Path)
	if err != nil {
		return nil, err
	}
	if err := base.cfg.CheckReload(cfg); err != nil {
		return nil, &needsRestart{err}
	}
	rt, b, err := loadTopology(cfg, a.schemas, a.log, a.opts.Stdout, a.onLuaError)
	if err != nil {
		return nil, err
	}
	next := newReloadBase(cfg, b)
	if err := base.shape.compatible(next.shape); err != nil {
		rt.Close()
		return nil, &needsRestart{err}
	}
	more, err := a.loadWorkerRuntimes(cfg, b)
	if err != nil {
		rt.Close()
		return nil, err
	}
	a.logReloadDiff(base, next)
	a.zeroLuaErrors(rt)
	return &reloadCandidate{cfg: cfg, rt: rt, b: b, more: more, base: next}, nil
}

func (a *Agent) onLuaError(script string) { a.metrics.LuaErrors.WithLabelValues(script).Inc() }

// zeroLuaErrors starts the Lua error counter of each of rt's files at zero: a counter that
// appears only with its first error hides that error from increase() and rate(), which need
// a sample before it.
func (a *Agent) zeroLuaErrors(rt *luart.Runtime) {
	for _, f := range rt.Files() {
		a.metrics.LuaErrors.WithLabelValues(f)
	}
}

// needsRestart is a change a reload refuses that a restart applies: a config key other than
// agent.scripts and agent.log.level, or a topology of other sources, global tables or
// stores. (A script that does not load is refused too, but a restart would not load it
// either.)
type needsRestart struct{ err error }

func (e *needsRestart) Error() string { return e.err.Error() }
func (e *needsRestart) Unwrap() error { return e.err }

func (a *Agent) reloadFailed(err error) {
	if errors.As(err, new(*needsRestart)) {
		a.log.Warn("reload refused; the running topology keeps running, and a restart applies the change (a reload keeps the config keys, sources, global tables and stores)", "reason", err)
	} else {
		a.log.Warn("reload refused; the running topology keeps running", "reason", err)
	}
	a.metrics.Reloads.WithLabelValues(metrics.ResultFailure).Inc()
	a.reload.pending.Store(false)
}

// reloaded publishes a topology the loop has just swapped in.
func (a *Agent) reloaded(c *reloadCandidate) {
	a.setTopology(c.b)
	a.reload.base.Store(c.base)
	if a.opts.LogLevel != nil {
		a.opts.LogLevel.Set(c.cfg.LogLevel)
	}
	a.log.Info("reload: the new topology is running", "scripts", c.cfg.Scripts)
	a.metrics.Reloads.WithLabelValues(metrics.ResultSuccess).Inc()
	a.reload.pending.Store(false)
}

// discardStaged drops a compatible topology the loop never took (the agent stopped).
func (a *Agent) discardStaged() {
	select {
	case c := <-a.reload.staged:
		c.close()
		a.reloadFailed(errors.New("the agent stopped before the next commit barrier"))
	default:
	}
}

// serveReload adds POST /-/reload: 202 when the reload is queued, 409 while one is pending;
// and GET /-/reload: whether one is pending, and a digest of each config key as the running
// topology was loaded with it, which `validate --against` compares with the file.
func (a *Agent) serveReload() {
	a.http.Handle("GET /-/reload", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		base := a.reload.base.Load()
		if base == nil {
			writeHTTPError(w, http.StatusServiceUnavailable, "not_ready", errReloadNotRunning.Error())
			return
		}
		writeJSON(w, http.StatusOK, reloadState{Pending: a.reload.pending.Load(), Config: base.cfg.ReloadDigests()})
	}))
	a.http.Handle("POST /-/reload", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		switch err := a.Reload(); {
		case err == nil:
			writeJSON(w, http.StatusAccepted, map[string]string{"status": "queued"})
		case errors.Is(err, ErrReloadPending):
			writeHTTPError(w, http.StatusConflict, "reload_pending", err.Error())
		default:
			writeHTTPError(w, http.StatusServiceUnavailable, "not_ready", err.Error())
		}
	}))
}

// reloadState is GET /-/reload's answer.
type reloadState struct {
	Pending bool              `json:"pending"`
	Config  map[string]string `json:"config"` // config key → digest of its value as written
}

// topologyShape is what a reload must keep: the topics read, the global tables and the
// stores with their serdes.
type topologyShape struct {
	sources []string // sorted
	globals []string // "topic → store", sorted
	stores  map[string]storeShape
}

type storeShape struct {
	typ, keySerde, valueSerde string
	logged                    *bool // nil when unknown (a running agent's /v1/stores does not say)
}

func shapeOfBuilder(b *pipeline.StreamsBuilder) topologyShape {
	stores := map[string]storeShape{}
	for _, s := range b.Stores() {
		logged := s.Logged
		info := query.InfoOf(s, 0)
		stores[s.Name] = storeShape{typ: info.Type, keySerde: info.KeySerde, valueSerde: info.ValueSerde, logged: &logged}
	}
	return shapeOfDescription(b.Describe(), stores)
}

func shapeOfDescription(d *pipeline.TopologyDescription, stores map[string]storeShape) topologyShape {
	sh := topologyShape{stores: stores}
	seen := map[string]bool{}
	for _, st := range d.Subtopologies {
		for _, n := range st.Nodes {
			if n.Type != "source" || n.Internal {
				continue
			}
			topics := n.Topics
			if n.TopicPattern != "" {
				topics = []string{"pattern " + n.TopicPattern}
			}
			for _, t := range topics {
				if !seen[t] {
					seen[t] = true
					sh.sources = append(sh.sources, t)
				}
			}
		}
	}
	for _, g := range d.GlobalStores {
		sh.globals = append(sh.globals, strings.Join(g.Source.Topics, ",")+" → "+strings.Join(g.Processor.Stores, ","))
	}
	sort.Strings(sh.sources)
	sort.Strings(sh.globals)
	return sh
}

// compatible says why the running topology (old) cannot be replaced by new, or nil.
func (old topologyShape) compatible(new topologyShape) error {
	if !slices.Equal(old.sources, new.sources) {
		return fmt.Errorf("source topics changed from %v to %v", old.sources, new.sources)
	}
	if !slices.Equal(old.globals, new.globals) {
		return fmt.Errorf("global tables changed from %v to %v", old.globals, new.globals)
	}
	var names []string
	for n := range old.stores {
		names = append(names, n)
	}
	for n := range new.stores {
		if _, ok := old.stores[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		o, inOld := old.stores[n]
		w, inNew := new.stores[n]
		switch {
		case !inNew:
			return fmt.Errorf("store %s was removed", n)
		case !inOld:
			return fmt.Errorf("store %s was added", n)
		case o.typ != w.typ:
			return fmt.Errorf("store %s: type changed from %s to %s", n, o.typ, w.typ)
		case o.keySerde != w.keySerde:
			return fmt.Errorf("store %s: key serde changed from %s to %s", n, o.keySerde, w.keySerde)
		case o.valueSerde != w.valueSerde:
			return fmt.Errorf("store %s: value serde changed from %s to %s", n, o.valueSerde, w.valueSerde)
		case o.logged != nil && w.logged != nil && *o.logged != *w.logged:
			return fmt.Errorf("store %s: logging changed from %t to %t", n, *o.logged, *w.logged)
		}
	}
	return nil
}

// ReloadCompatibleWith loads cfg's config file and scripts and checks whether the agent
// listening at base (http://host:port) could reload into them: GET /-/reload gives the
// digests of the config keys it runs with, GET /topology and GET /v1/stores the running
// sources, global tables and stores. Whether a store is logged is not compared: the agent
// checks that itself when it reloads.
func ReloadCompatibleWith(ctx context.Context, cfg *config.Config, base string) error {
	var running reloadState
	if err := getAgentJSON(ctx, cfg, base, "/-/reload", &running); err != nil {
		return err
	}
	if err := cfg.CheckReloadAgainst(running.Config); err != nil {
		return err
	}
	var desc pipeline.TopologyDescription
	if err := getAgentJSON(ctx, cfg, base, "/topology", &desc); err != nil {
		return err
	}
	var infos []query.StoreInfo
	if err := getAgentJSON(ctx, cfg, base, query.RouteStores, &infos); err != nil {
		return err
	}
	stores := map[string]storeShape{}
	for _, s := range infos {
		stores[s.Name] = storeShape{typ: s.Type, keySerde: s.KeySerde, valueSerde: s.ValueSerde}
	}
	rt, b, err := loadTopology(cfg, offlineSchemas(cfg), nil, io.Discard, nil)
	if err != nil {
		return err
	}
	defer rt.Close()
	next := shapeOfBuilder(b)
	for name, s := range next.stores {
		s.logged = nil
		next.stores[name] = s
	}
	return shapeOfDescription(&desc, stores).compatible(next)
}

// getAgentJSON GETs base+path from a running agent (with the config's bearer token) into v.
func getAgentJSON(ctx context.Context, cfg *config.Config, base, path string, v any) error {
	url := strings.TrimSuffix(base, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("--against %s: %w", base, err)
	}
	if cfg.HTTPToken != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.HTTPToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}
