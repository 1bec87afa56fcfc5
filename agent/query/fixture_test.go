package query

import (
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/agent/internal/webtest"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// testAgent is the agent as the tests of this package see it: a catalogue the test builds,
// in state REBALANCING unless the test says otherwise.
type testAgent struct {
	stores atomic.Pointer[Catalog]
	state  atomic.Pointer[string]
	// active, when set, makes the agent a standby of the active it names (instance, host).
	active atomic.Pointer[[2]string]
	// copies are a standby's copies of store partitions, with their lags: the partitions it
	// follows (in a streams group, those of its standby tasks). The others it holds no copy of.
	copies atomic.Pointer[map[int32]LagInfo]
	// standbyHosts are what StandbyHosts answers for every store partition.
	standbyHosts []string
	// local, when set, makes the agent a member of a streams group running the partitions
	// it lists (of every store), and placement the group's as the agent knows it.
	local     atomic.Pointer[map[int32]bool]
	placement atomic.Pointer[Placement]
}

func (a *testAgent) Stores() *Catalog { return a.stores.Load() }

func (a *testAgent) State() string {
	if s := a.state.Load(); s != nil {
		return *s
	}
	return stateRebalancing
}

func (a *testAgent) ActiveHost() string { return "localhost:9464" }

func (a *testAgent) Standby() (string, string, bool) {
	if act := a.active.Load(); act != nil {
		return act[0], act[1], true
	}
	return "", "", false
}

func (a *testAgent) Holding(_ string, p int32) Holding {
	if local := a.local.Load(); local != nil {
		if c := a.copies.Load(); c != nil && !(*local)[p] {
			if lag, ok := (*c)[p]; ok {
				return Holding{Standby: true, Lag: lag}
			}
		}
		return Holding{Active: (*local)[p]}
	}
	if a.active.Load() == nil {
		return Holding{Active: true}
	}
	if c := a.copies.Load(); c != nil {
		if lag, ok := (*c)[p]; ok {
			return Holding{Standby: true, Lag: lag}
		}
	}
	return Holding{Why: "a cold standby"}
}

func (a *testAgent) StandbyHosts(string, int32) []string { return a.standbyHosts }

func (a *testAgent) Placement() (*Placement, bool) { return a.placement.Load(), a.local.Load() != nil }

// fixture serves the query endpoints of a testAgent, as the agent does.
type fixture struct {
	agent *testAgent
	sv    *server
	mux   *http.ServeMux
}

var testOptions = Options{MaxConcurrency: 10, Timeout: time.Minute, WriteJSON: writeJSON, WriteError: writeError}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"error": msg, "code": code})
}

// fixtureWithDB is a fixture and an empty state database.
func fixtureWithDB(t testing.TB) (*fixture, *state.DB) {
	t.Helper()
	return fixtureWithOptions(t, testOptions)
}

// fixtureWithOptions is fixtureWithDB serving with opts.
func fixtureWithOptions(t testing.TB, opts Options) (*fixture, *state.DB) {
	t.Helper()
	f := &fixture{agent: &testAgent{}, mux: http.NewServeMux()}
	f.sv = &server{agent: f.agent, opts: opts}
	Serve(f.mux.Handle, f.agent, opts)
	db, err := state.Open(t.TempDir(), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return f, db
}

// serveStores makes the stores of db the application's, as the agent does once they are
// restored.
func (f *fixture) serveStores(db *state.DB, specs []pipeline.StoreSpec, partitions int32) {
	f.agent.stores.Store(&Catalog{DB: db, Specs: specs, Partitions: partitions})
}

// serveRunning makes the stores of db the application's and the application RUNNING.
func (f *fixture) serveRunning(db *state.DB, specs []pipeline.StoreSpec, partitions int32) {
	f.serveStores(db, specs, partitions)
	running := stateRunning
	f.agent.state.Store(&running)
}

// serve answers a request in-process and decodes the first JSON document of the answer.
func (f *fixture) serve(t *testing.T, method, target, body string) (int, map[string]any) {
	t.Helper()
	return webtest.Serve(t, f.mux, method, target, body)
}

// answer is an HTTP answer: its status, headers and body, and the body's JSON object.
type answer struct {
	status int
	header http.Header
	body   map[string]string
	raw    string
}

func get(t *testing.T, url string) answer {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

func wantError(t *testing.T, a answer, status int, code string) {
	t.Helper()
	if a.status != status || a.body["code"] != code || a.body["error"] == "" {
		t.Errorf("got %d %q, want %d with JSON error code %q", a.status, a.raw, status, code)
	}
}
