package agent

import (
	"github.com/stoatflow/stoatflow/agent/console"
)

// serveConsole adds the operator console (agent/console): GET /ui, GET /v1/status and the
// live taps, GET /v1/tap/{node}.
func (a *Agent) serveConsole() {
	srv := console.NewServer(console.Sources{
		Metrics: a.metrics,
		State:   func() string { return a.state.Current().String() },
		Nodes: func() []string {
			if v := a.topology.Load(); v != nil {
				return v.desc.NodeNames()
			}
			return nil
		},
		Time: a.time.Load,
		Tasks: func() map[string]int {
			if t := a.tasks.Load(); t != nil {
				return *t
			}
			return nil
		},
		Assignment:          a.assignment,
		StoreSizes:          a.storeSizes,
		UncommittedMaxBytes: a.cfg.UncommittedMaxBytes,
		Restore:             a.restores,
		Log:                 a.recent,
		Taps:                a.taps,
		WriteJSON:           writeJSON,
		WriteError:          writeHTTPError,
	})
	srv.Register(a.http.Handle)
	a.http.OnShutdown(srv.Close)
}

// storeSizes are the stores' approximate sizes on disk; none before they are restored.
func (a *Agent) storeSizes() map[string]int64 {
	c := a.stores.Load()
	if c == nil || c.DB == nil {
		return nil
	}
	out := make(map[string]int64, len(c.Specs))
	for _, s := range c.Specs {
		// A size that cannot be read (a database being rebuilt) is shown as 0.
		out[s.Name], _ = c.DB.ApproximateSize(s.Name)
	}
	return out
}
