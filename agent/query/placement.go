package query

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
)

// Placement is where the store partitions are processed when the application's tasks are
// spread over agents (group.protocol = "streams"): each agent, named by its
// application.server, with the partitions of each store it runs as the active, from the
// endpoint information the group's coordinator sends with the heartbeats (Kafka Streams'
// StreamsMetadataState). An agent without application.server is in none of it. It is not
// changed once made.
type Placement struct {
	// Self is this agent's application.server, "" when it has none.
	Self string
	// Hosts are the store partitions each agent runs, by application.server, then store;
	// each list sorted.
	Hosts map[string]map[string][]int32
	// Standbys are the store partitions each agent keeps standby copies of (its standby
	// tasks'), in the same form.
	Standbys map[string]map[string][]int32
	owners   map[storePartition]string
	copies   map[storePartition][]string
}

type storePartition struct {
	store     string
	partition int32
}

// NewPlacement indexes hosts by store partition.
func NewPlacement(self string, hosts map[string]map[string][]int32) *Placement {
	return NewPlacementWithStandbys(self, hosts, nil)
}

// NewPlacementWithStandbys indexes hosts, and the agents keeping standby copies, by store
// partition.
func NewPlacementWithStandbys(self string, hosts, standbys map[string]map[string][]int32) *Placement {
	pl := &Placement{Self: self, Hosts: hosts, Standbys: standbys, owners: map[storePartition]string{}, copies: map[storePartition][]string{}}
	for host, stores := range hosts {
		for store, ps := range stores {
			for _, p := range ps {
				pl.owners[storePartition{store, p}] = host
			}
		}
	}
	for _, host := range slices.Sorted(maps.Keys(standbys)) {
		for store, ps := range standbys[host] {
			for _, p := range ps {
				sp := storePartition{store, p}
				pl.copies[sp] = append(pl.copies[sp], host)
			}
		}
	}
	return pl
}

// StandbyHosts are the application.server of the agents keeping standby copies of
// partition p of store, sorted; an empty list for none.
func (pl *Placement) StandbyHosts(store string, p int32) []string {
	return append([]string{}, pl.copies[storePartition{store, p}]...)
}

// Owner is the application.server of the agent that runs partition p of store, "" when
// the coordinator names none (the task is being moved, or its agent has no
// application.server).
func (pl *Placement) Owner(store string, p int32) string {
	return pl.owners[storePartition{store, p}]
}

// placed is the placement a query reads, taken once so that one query sees one.
type placed struct {
	pl     *Placement
	spread bool
}

func (sv *server) placement() placed {
	pl, spread := sv.agent.Placement()
	return placed{pl, spread}
}

// redirect answers a key read or IQv2 query whose partition p of store another agent of the
// streams group runs: 307 to that agent, the same path and query (Location is set on w). The agent redirects
// rather than forwards (docs/queries.md): a forward would hold a query slot here while
// another agent answers, and make this agent a client of its peers with their TLS and
// tokens; the client instead reaches the owner with its own, and can learn the owners from
// /v1/metadata and go there first, as Kafka Streams applications route with
// queryMetadataForKey. Ranges and counts, which no one agent answers, are forwarded
// (fanout.go). While no other agent can be named the answer is 503 not_available.
func (pd placed) redirect(w http.ResponseWriter, r *http.Request, store string, p int32) *apiError {
	if pd.pl == nil {
		return notPlaced()
	}
	owner := pd.pl.Owner(store, p)
	switch owner {
	case "":
		return unowned(store, p)
	case pd.pl.Self:
		return movingHere(store, p)
	}
	return redirectTo(w, r, owner, fmt.Sprintf(
		"partition %d of store %s is served by the agent at %s (group.protocol = streams): follow the redirect", p, store, owner))
}

// redirectTo answers 307 to the same request at the agent at host.
func redirectTo(w http.ResponseWriter, r *http.Request, host, why string) *apiError {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	w.Header().Set("Location", scheme+"://"+host+r.URL.RequestURI())
	return &apiError{http.StatusTemporaryRedirect, "redirect", why}
}

// standbyElsewhere is the first agent other than this one keeping a standby copy of
// partition p of store, "" for none.
func (pd placed) standbyElsewhere(store string, p int32) string {
	for _, h := range pd.pl.StandbyHosts(store, p) {
		if h != pd.pl.Self {
			return h
		}
	}
	return ""
}

// route redirects a query of partitions all run elsewhere to the agent running the first
// of them that another agent runs (that agent answers its own and names the agents of the
// others), or says why it cannot.
func (pd placed) route(w http.ResponseWriter, r *http.Request, store string, ps []int32) *apiError {
	for _, p := range ps {
		if pd.pl != nil {
			if owner := pd.pl.Owner(store, p); owner != "" && owner != pd.pl.Self {
				return pd.redirect(w, r, store, p)
			}
		}
	}
	return pd.redirect(w, r, store, ps[0])
}

func unowned(store string, p int32) *apiError {
	return &apiError{http.StatusServiceUnavailable, "not_available", fmt.Sprintf(
		"no agent of the streams group with an application.server runs partition %d of store %s now "+
			"(its task is moving, or runs on an agent without application.server): retry", p, store)}
}

func movingHere(store string, p int32) *apiError {
	return &apiError{http.StatusServiceUnavailable, "not_available", fmt.Sprintf(
		"partition %d of store %s is moving to this agent, which has not taken its task yet: retry", p, store)}
}

func notPlaced() *apiError {
	return &apiError{http.StatusServiceUnavailable, "not_available",
		"the streams group's coordinator has not named the agents running the tasks yet (before the first assignment): retry"}
}

// notPresent is the IQv2 failure of a partition another agent runs.
func (pd placed) notPresent(store string, p int32) string {
	where := "no agent with an application.server runs it now (its task is moving): retry"
	if pd.pl == nil {
		where = "the group's coordinator has not named the agents yet: retry"
	} else if owner := pd.pl.Owner(store, p); owner == pd.pl.Self && owner != "" {
		where = "it is moving to this agent: retry"
	} else if owner != "" {
		where = fmt.Sprintf("the agent at %s runs it: query partition %d there", owner, p)
	}
	return fmt.Sprintf("The requested partition was not present at the time of the query: partition %d of store %s belongs to a task "+
		"another agent of the streams group runs; %s", p, store, where)
}

// metadataHosts lists the agents for allMetadata: in a streams group every agent the
// coordinator names; else the active agent, with every partition, and the warm standbys,
// with every partition of the logged stores. A global store is held whole by every agent.
func (sv *server) metadataHosts() ([]StreamsMetadata, *apiError) {
	if st := sv.agent.State(); st != stateRunning && st != stateRebalancing && st != stateStandby {
		return nil, &apiError{http.StatusServiceUnavailable, "not_available", fmt.Sprintf(
			"metadata is not available in state %s (Kafka Streams answers none outside RUNNING, REBALANCING and, for StoatFlow, STANDBY)", st)}
	}
	c := sv.agent.Stores()
	if c == nil {
		return nil, notReady(sv.agent.State())
	}
	var global []string
	for _, s := range c.Specs {
		if c.Global[s.Name] {
			global = append(global, s.Name)
		}
	}
	all := func(ps int32) []int32 {
		out := make([]int32, ps)
		for p := range ps {
			out[p] = p
		}
		return out
	}
	entry := func(host string, stores map[string][]int32, standby map[string][]int32) StreamsMetadata {
		stores = maps.Clone(stores)
		if stores == nil {
			stores = map[string][]int32{}
		}
		for _, g := range global {
			stores[g] = []int32{0}
		}
		if standby == nil {
			standby = map[string][]int32{}
		}
		return StreamsMetadata{HostInfo: host, StateStoreNames: storeNames(stores), StorePartitions: stores,
			StandbyStateStoreNames: storeNames(standby), StandbyStorePartitions: standby}
	}
	if pl, spread := sv.agent.Placement(); spread {
		if pl == nil {
			return nil, notPlaced()
		}
		out := []StreamsMetadata{}
		hosts := maps.Clone(pl.Hosts)
		for host := range pl.Standbys {
			if _, ok := hosts[host]; !ok {
				hosts[host] = nil
			}
		}
		for _, host := range slices.Sorted(maps.Keys(hosts)) {
			out = append(out, entry(host, pl.Hosts[host], pl.Standbys[host]))
		}
		return out, nil
	}
	host := sv.agent.ActiveHost()
	if instance, active, standby := sv.agent.Standby(); standby {
		if active == "" {
			return nil, &apiError{http.StatusServiceUnavailable, "not_available", fmt.Sprintf(
				"this agent is a standby and the active agent %s has no application.server to name", instance)}
		}
		host = active
	}
	stores, logged := map[string][]int32{}, map[string][]int32{}
	for _, s := range c.Specs {
		if c.Global[s.Name] {
			continue
		}
		stores[s.Name] = all(c.Partitions)
		if s.Logged {
			logged[s.Name] = all(c.Partitions)
		}
	}
	out := []StreamsMetadata{entry(host, stores, nil)}
	var standbys []string
	if names := storeNames(logged); len(names) > 0 {
		// The warm standbys follow every partition of every logged store.
		standbys = sv.agent.StandbyHosts(names[0], 0)
	}
	for _, h := range standbys {
		out = append(out, entry(h, nil, logged))
	}
	return out, nil
}

// storeNames are the stores of m, sorted; an empty list, not null, for none.
func storeNames(m map[string][]int32) []string {
	return append([]string{}, slices.Sorted(maps.Keys(m))...)
}

// allMetadata is KafkaStreams#metadataForAllStreamsClients: every agent of the application
// with the store partitions it runs and those it keeps standby copies of.
func (sv *server) allMetadata(w http.ResponseWriter, r *http.Request) *apiError {
	if e := sv.checkIsolationParam(r.URL.Query()); e != nil {
		return e
	}
	out, e := sv.metadataHosts()
	if e != nil {
		return e
	}
	sv.opts.WriteJSON(w, http.StatusOK, out)
	return nil
}

// storeMetadata is KafkaStreams#streamsMetadataForStore: the agents holding store.
func (sv *server) storeMetadata(w http.ResponseWriter, r *http.Request) *apiError {
	if e := sv.checkIsolationParam(r.URL.Query()); e != nil {
		return e
	}
	name := r.PathValue("store")
	if _, e := sv.lookupStore(name); e != nil {
		return e
	}
	hosts, e := sv.metadataHosts()
	if e != nil {
		return e
	}
	out := []StreamsMetadata{}
	for _, h := range hosts {
		active, standby := h.StorePartitions[name], h.StandbyStorePartitions[name]
		if active == nil && standby == nil {
			continue
		}
		m := StreamsMetadata{HostInfo: h.HostInfo, StateStoreNames: []string{}, StorePartitions: map[string][]int32{},
			StandbyStateStoreNames: []string{}, StandbyStorePartitions: map[string][]int32{}}
		if active != nil {
			m.StateStoreNames, m.StorePartitions[name] = []string{name}, active
		}
		if standby != nil {
			m.StandbyStateStoreNames, m.StandbyStorePartitions[name] = []string{name}, standby
		}
		out = append(out, m)
	}
	sv.opts.WriteJSON(w, http.StatusOK, out)
	return nil
}

// readable reports whether this agent answers from partition p: it runs it, or keeps a
// standby copy of it and the caller allows stale stores.
func (rs *replicas) readable(p int32) bool {
	h := rs.sv.agent.Holding(rs.store, p)
	return h.Active || (rs.stale && h.Standby)
}

// keyOrder is the partitions a read by key looks in, in order (searchOrder). In a streams
// group the key's own partition must be this agent's (else the read is redirected to the
// agent running it, unless this agent keeps a standby copy of it and the caller allows
// stale stores), and only the partitions this agent answers from are searched.
func (s *queryStore) keyOrder(w http.ResponseWriter, r *http.Request, key []byte) ([]int32, *apiError) {
	order := s.searchOrder(key)
	pd := s.replicas.placed
	if !pd.spread {
		return order, nil
	}
	if !s.replicas.readable(order[0]) {
		if s.replicas.stale && pd.pl != nil && pd.pl.Owner(s.name, order[0]) == "" {
			if copyHost := pd.standbyElsewhere(s.name, order[0]); copyHost != "" {
				return nil, redirectTo(w, r, copyHost, fmt.Sprintf(
					"no agent runs partition %d of store %s now (its task is moving); the agent at %s keeps a standby copy of it "+
						"and answers stale reads: follow the redirect", order[0], s.name, copyHost))
			}
		}
		return nil, pd.redirect(w, r, s.name, order[0])
	}
	return slices.DeleteFunc(order, func(p int32) bool { return !s.replicas.readable(p) }), nil
}

// unsearched says, for a key not found, which partitions other agents run and the read
// did not look in ("" when it looked in all).
func (s *queryStore) unsearched(searched int) string {
	if n := int(s.partitions) - searched; n > 0 {
		return fmt.Sprintf("; its %d partitions other agents of the streams group run were not searched", n)
	}
	return ""
}
