// Package query answers interactive queries (DESIGN §7, docs/queries.md): the IQv1
// endpoints over one store's keys and windows, IQv2's POST /v2/query with one table of
// query kinds, and key metadata. Its routes and wire types are the CLI's too (stoatflow
// query). What it needs of the agent comes through Agent, so it holds no agent state.
package query

import (
	"fmt"
	"net/http"
	"runtime"
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
	// WriteJSON and WriteError answer as every endpoint of the agent does.
	WriteJSON  func(w http.ResponseWriter, status int, v any)
	WriteError func(w http.ResponseWriter, status int, code, msg string)
}

// server answers the queries of one agent.
type server struct {
	agent Agent
	opts  Options
}

// Serve adds the interactive-query endpoints (DESIGN §7, docs/queries.md) through handle,
// all behind one gate (agent.http.query.max.concurrency, agent.http.query.timeout).
func Serve(handle func(pattern string, h http.Handler), agent Agent, opts Options) {
	sv := &server{agent: agent, opts: opts}
	g := newQueryGate(opts.MaxConcurrency, runtime.GOMAXPROCS(0), opts.Timeout, opts.WriteError)
	gated := func(pattern string, h http.Handler) { handle(pattern, g.admit(h)) }
	gated("GET "+RouteStores, sv.api([]string{"isolation"}, sv.listStores))
	gated("GET "+RouteKey, sv.activeOnly(sv.api([]string{"isolation"}, sv.getKey)))
	gated("GET "+RouteKeys, sv.activeOnly(sv.api([]string{"isolation", "from", "to", "prefix", "reverse", "limit", "after"}, sv.rangeKeys)))
	gated("GET "+RouteCount, sv.activeOnly(sv.api([]string{"isolation"}, sv.countKeys)))
	gated("GET "+RouteWindows, sv.activeOnly(sv.api([]string{"isolation", "from", "to", "reverse"}, sv.fetchWindows)))
	gated("POST "+RouteIQv2, sv.activeOnly(sv.api(nil, sv.queryV2)))
	gated("GET "+RouteMetadata, http.HandlerFunc(sv.keyMetadata))
}

// activeOnly refuses store queries on a standby, with a pointer to the active: a standby's
// state trails the active's (Kafka Streams too serves stale standby stores only when asked).
func (sv *server) activeOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		instance, host, standby := sv.agent.Standby()
		if !standby {
			h.ServeHTTP(w, r)
			return
		}
		where := "it has no application.server"
		if host != "" {
			where = "it answers at " + host
		}
		sv.opts.WriteError(w, http.StatusServiceUnavailable, "standby", fmt.Sprintf(
			"this agent is a standby of application %s; query the active agent %s (%s): GET /v1/metadata/{store}/{key} names it", sv.opts.ApplicationID, instance, where))
	})
}

// UnavailableHost is the activeHost of a key whose agent cannot be named: Kafka Streams'
// HostInfo.unavailable() (host "unavailable", port -1), which it answers when
// application.server is unset.
const UnavailableHost = "unavailable:-1"
