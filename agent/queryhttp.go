package agent

import "github.com/stoatflow/stoatflow/agent/query"

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
	return v.a.http.Addr()
}

func (v queryView) Standby() (instance, host string, ok bool) {
	if v.a.state.Current() != StateStandby {
		return "", "", false
	}
	instance, host = v.a.activeMember()
	return instance, host, true
}
