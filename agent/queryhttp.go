package agent

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/netip"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/query"
	"github.com/stoatflow/stoatflow/state"
)

// serveQueries adds the interactive-query endpoints (agent/query).
func (a *Agent) serveQueries() {
	query.Serve(a.http.Handle, queryView{a}, query.Options{
		ApplicationID:    a.cfg.ApplicationID,
		DefaultIsolation: a.cfg.DefaultIQIsolation,
		MaxConcurrency:   a.cfg.QueryMaxConcurrency,
		Timeout:          a.cfg.QueryTimeout,
		Peers:            peerClient(a.http.tls),
		MaxRecordBytes:   config.MaxRequestSize.Get(a.cfg.Client(config.ForProducer)),
		WriteJSON:        writeJSON,
		WriteError:       writeHTTPError,
	})
}

// peerClient is the client a range or count spread over the agents of a streams group
// reaches the other agents with (agent/query fans it out). Over TLS it trusts the system's
// roots and the certificates of this agent's own chain (agent.http.tls.cert): the agents of
// one application present certificates of one issuer, or the same one. It never follows a
// redirect: an agent asked for its own partitions answers them or refuses.
func peerClient(own *tls.Config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if own != nil && len(own.Certificates) > 0 {
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		for _, der := range own.Certificates[0].Certificate {
			if c, err := x509.ParseCertificate(der); err == nil {
				roots.AddCert(c)
			}
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// queryView is the agent as interactive queries read it.
type queryView struct{ a *Agent }

func (v queryView) Stores() *query.Catalog { return v.a.stores.Load() }

func (v queryView) State() string { return v.a.state.Current().String() }

func (v queryView) ActiveHost() string {
	if h := v.a.cfg.ApplicationServer; h != "" {
		return h
	}
	addr := v.a.http.Addr()
	if wildcardListen(addr) {
		return query.UnavailableHost
	}
	return addr
}

// wildcardListen reports whether a listen address (host:port) names every interface (0.0.0.0,
// [::], an empty host): no client can reach the agent at it.
func wildcardListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsUnspecified()
}

func (v queryView) Standby() (instance, host string, ok bool) {
	if v.a.state.Current() != StateStandby {
		return "", "", false
	}
	instance, host = v.a.activeMember()
	return instance, host, true
}

// Holding: an agent that is not a standby processes every partition (in the single-active
// mode one agent owns every task); a warm standby holds a copy of each logged store
// partition it follows, with its lag as of its latest round. In a streams group, the
// partitions of the agent's active tasks are current, those of its standby and warmup
// tasks are copies once followed.
func (v queryView) Holding(store string, p int32) query.Holding {
	if v.a.streamsGroup() {
		held := v.a.held.Load()
		if c := v.a.stores.Load(); (c != nil && c.Global[store]) || (held != nil && held.holds(store, p)) {
			return query.Holding{Active: true}
		}
		if held == nil || !held.keeps(store, p) {
			return query.Holding{Why: fmt.Sprintf("partition %d of store %s belongs to a task another agent of the streams group runs", p, store)}
		}
		if copies := v.a.copies.Load(); copies != nil {
			if lag, ok := (*copies)[state.ChangelogPartition{Store: store, Partition: p}]; ok {
				return query.Holding{Standby: true, Lag: lag}
			}
		}
		if c := v.a.stores.Load(); c != nil && !storeLogged(c, store) {
			return query.Holding{Why: "the store has no changelog to follow"}
		}
		return query.Holding{Why: "this agent keeps a standby task of the partition but has not read its changelog yet; retry in a second"}
	}
	if v.a.state.Current() != StateStandby {
		return query.Holding{Active: true}
	}
	if copies := v.a.copies.Load(); copies != nil {
		if lag, ok := (*copies)[state.ChangelogPartition{Store: store, Partition: p}]; ok {
			return query.Holding{Standby: true, Lag: lag}
		}
	}
	c := v.a.stores.Load()
	role := v.a.group.Load()
	switch {
	case c != nil && c.Global[store]:
		return query.Holding{Why: "a standby does not follow the global tables (it reads them when it takes over)"}
	case c != nil && !storeLogged(c, store):
		return query.Holding{Why: "the store has no changelog to follow"}
	case role == nil || !role.Warm:
		return query.Holding{Why: fmt.Sprintf("this standby is cold: only the %d most caught-up standbys (num.standby.replicas) follow the changelogs", v.a.cfg.NumStandbyReplicas)}
	}
	return query.Holding{Why: "it has not read the changelog yet; retry in a second"}
}

func storeLogged(c *query.Catalog, store string) bool {
	for _, s := range c.Specs {
		if s.Name == store {
			return s.Logged
		}
	}
	return false
}

// Placement: in a streams group, which agent runs each store partition, from the group's
// endpoint information (streamsgroup.go).
func (v queryView) Placement() (*query.Placement, bool) {
	if !v.a.streamsGroup() {
		return nil, false
	}
	if src := v.a.endpoints.Load(); src != nil {
		return src.placement(), true
	}
	return nil, true
}

// StandbyHosts are the warm standbys' application.server, as the group's leader named them
// in the latest generation: each follows every partition of every logged store.
func (v queryView) StandbyHosts(store string, _ int32) []string {
	c, r := v.a.stores.Load(), v.a.group.Load()
	if c == nil || r == nil || c.Global[store] || !storeLogged(c, store) {
		return nil
	}
	return r.StandbyHosts
}
