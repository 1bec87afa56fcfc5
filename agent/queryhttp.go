package agent

import (
	"net"
	"net/netip"

	"github.com/stoatflow/stoatflow/agent/query"
)

// serveQueries adds the interactive-query endpoints (agent/query).
func (a *Agent) serveQueries() {
	query.Serve(a.http.Handle, queryView{a}, query.Options{
		ApplicationID:    a.cfg.ApplicationID,
		DefaultIsolation: a.cfg.DefaultIQIsolation,
		MaxConcurrency:   a.cfg.QueryMaxConcurrency,
		Timeout:          a.cfg.QueryTimeout,
		WriteJSON:        writeJSON,
		WriteError:       writeHTTPError,
	})
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
