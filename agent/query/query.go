// Package query answers interactive queries (DESIGN §7, docs/queries.md): the IQv1
// endpoints over one store's keys and windows, IQv2's POST /v2/query with one table of
// query kinds, and key metadata. Its routes and wire types are the CLI's too (stoatflow
// query). What it needs of the agent comes through Agent, so it holds no agent state.
package query

import (
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// Agent is what queries read of the agent that serves them.
type Agent interface {
	// Stores is the store catalogue; nil until the stores are restored.
	Stores() *Catalog
	// State is the application state, named as KafkaStreams.State names it (RUNNING,
	// REBALANCING, ...).
	State() string
	// ActiveHost is the host:port answered as the one serving a key: application.server,
	// else the HTTP server's address, else (a wildcard address, which names no host)
	// UnavailableHost.
	ActiveHost() string
	// Standby, while this agent is a standby of its application (state STANDBY), names the
	// active agent: its group.instance.id and its application.server ("" when it has none).
	Standby() (instance, host string, ok bool)
	// Holding says how this agent holds partition p of store: as the active, as a standby
	// copy with its lag, or not at all.
	Holding(store string, p int32) Holding
	// StandbyHosts are the application.server of the agents that keep standby copies of
	// partition p of store (Kafka Streams' KeyQueryMetadata.standbyHosts).
	StandbyHosts(store string, p int32) []string
	// Placement, when the application's tasks are spread over agents (group.protocol =
	// "streams"), says which agent runs each store partition: spread is true, and pl is nil
	// until the group's coordinator first named the agents (before the first assignment).
	// In the single-active mode spread is false: the active agent runs every partition.
	Placement() (pl *Placement, spread bool)
}

// Holding is how an agent holds one store partition. Stale reads are decided per store
// partition, so an agent may hold some partitions as the active and others as standby
// copies.
type Holding struct {
	// Active: the agent processes the partition, its state is current.
	Active bool
	// Standby: the agent keeps a copy following the partition's changelog; Lag is how far
	// it trails, as the agent last saw the changelog's end.
	Standby bool
	Lag     LagInfo
	// Why says, when the agent holds no current copy, why not (a cold standby, a store
	// without changelog).
	Why string
}

// LagInfo is Kafka Streams' LagInfo: how far a standby copy of a store partition trails
// its changelog, in offsets.
type LagInfo struct {
	CurrentOffsetPosition int64 `json:"currentOffsetPosition"` // the offset the copy has read up to
	EndOffsetPosition     int64 `json:"endOffsetPosition"`     // the changelog's end, when last read
	OffsetLag             int64 `json:"offsetLag"`             // end - current
}

// The application states queries tell apart (KafkaStreams.State).
const (
	stateRunning     = "RUNNING"
	stateRebalancing = "REBALANCING"
	stateStandby     = "STANDBY"
)

// Catalog describes the running application's state for interactive queries: the
// database, the declared stores with their serdes, and how they are partitioned.
type Catalog struct {
	DB         *state.DB
	Specs      []pipeline.StoreSpec
	Partitions int32           // partitions of every store but the global ones (the number of tasks)
	Global     map[string]bool // the global tables' stores: one partition, 0
}

// PartitionsOf is the number of partitions of a store.
func (c *Catalog) PartitionsOf(store string) int32 {
	if c.Global[store] {
		return 1
	}
	return c.Partitions
}

// Options are the query settings of the agent's config and the agent's way of answering.
type Options struct {
	ApplicationID    string        // application.id: names the changelogs, the serdes' topic
	DefaultIsolation string        // default.interactive.query.isolation.level; "" is READ_UNCOMMITTED
	MaxConcurrency   int           // agent.http.query.max.concurrency
	Timeout          time.Duration // agent.http.query.timeout
	// Peers is the client a range or count fanned out across the agents of a streams group
	// reaches the other agents with; it must not follow redirects. Nil: a plain client.
	Peers *http.Client
	// MaxRecordBytes is producer.max.request.size: no entry of a logged store is larger (its
	// changelog record would be refused), so it bounds what an item of another agent's
	// answer to a forwarded range may take (peerItemBytes). 0: the default, 1 MiB.
	MaxRecordBytes int64
	// WriteJSON and WriteError answer as every endpoint of the agent does.
	WriteJSON  func(w http.ResponseWriter, status int, v any)
	WriteError func(w http.ResponseWriter, status int, code, msg string)
}

// server answers the queries of one agent.
type server struct {
	agent Agent
	opts  Options
	peers *http.Client
}

// Serve adds the interactive-query endpoints (DESIGN §7, docs/queries.md) through handle,
// all behind one gate (agent.http.query.max.concurrency, agent.http.query.timeout).
func Serve(handle func(pattern string, h http.Handler), agent Agent, opts Options) {
	sv := &server{agent: agent, opts: opts, peers: opts.Peers}
	if sv.peers == nil {
		sv.peers = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	g := newQueryGate(opts.MaxConcurrency, runtime.GOMAXPROCS(0), opts.Timeout, opts.WriteError)
	gated := func(pattern string, h http.Handler) { handle(pattern, g.admit(h)) }
	// byKey serves a route ending in {key}, and the same route ending in a slash: the key
	// there is the empty one ("" of a string serde) or "/" (%2F).
	byKey := func(route string, h http.Handler) {
		gated("GET "+route, h)
		gated("GET "+strings.TrimSuffix(route, "{key}")+"{$}", sv.lastSegmentKey(h))
	}
	gated("GET "+RouteStores, sv.api([]string{"isolation"}, sv.listStores))
	byKey(RouteKey, sv.api([]string{"isolation", StaleParam}, sv.getKey))
	gated("GET "+RouteKeys, sv.api([]string{"isolation", StaleParam, "from", "to", "prefix", "reverse", "limit", "after", PartitionsParam}, sv.rangeKeys))
	gated("GET "+RouteCount, sv.api([]string{"isolation", StaleParam, PartitionsParam}, sv.countKeys))
	byKey(RouteWindows, sv.api([]string{"isolation", StaleParam, "from", "to", "reverse"}, sv.fetchWindows))
	gated("POST "+RouteIQv2, sv.api([]string{"isolation"}, sv.queryV2))
	byKey(RouteMetadata, http.HandlerFunc(sv.keyMetadata))
	gated("GET "+RouteAllMetadata, sv.api([]string{"isolation"}, sv.allMetadata))
	gated("GET "+RouteStoreMetadata, sv.api([]string{"isolation"}, sv.storeMetadata))
}

// lastSegmentKey serves a key route that ends in a slash, its key being the path's last
// segment. The mux matches {key} to no empty segment, and takes an escaped slash (%2F)
// standing alone for a trailing slash: both come here, so the key is read from the escaped
// path, where the two differ.
func (sv *server) lastSegmentKey(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		key, err := url.PathUnescape(p[strings.LastIndexByte(p, '/')+1:])
		if err != nil {
			sv.opts.WriteError(w, http.StatusBadRequest, "bad_parameter", "key: "+err.Error())
			return
		}
		r.SetPathValue("key", key)
		h.ServeHTTP(w, r)
	})
}

// UnavailableHost is the activeHost of a key whose agent cannot be named: Kafka Streams'
// HostInfo.unavailable() (host "unavailable", port -1), which it answers when
// application.server is unset.
const UnavailableHost = "unavailable:-1"
