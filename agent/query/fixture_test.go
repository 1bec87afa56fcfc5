package query

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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
	f := &fixture{agent: &testAgent{}, mux: http.NewServeMux()}
	f.sv = &server{agent: f.agent, opts: testOptions}
	Serve(f.mux.Handle, f.agent, testOptions)
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

// queryRequest is a request as a local client sends it: to localhost, a body as JSON.
func queryRequest(method, target, body string) *http.Request {
	r := httptest.NewRequest(method, "http://localhost"+target, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

// serve answers a request in-process and decodes the first JSON document of the answer.
func (f *fixture) serve(t *testing.T, method, target, body string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	f.mux.ServeHTTP(rec, queryRequest(method, target, body))
	dec := json.NewDecoder(rec.Body)
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	obj, _ := v.(map[string]any)
	if obj == nil {
		obj = map[string]any{"list": v}
	}
	return rec.Code, obj
}

// itemKeys are the keys of a page's items, comma-separated.
func itemKeys(t *testing.T, obj map[string]any) string {
	t.Helper()
	items, ok := obj["items"].([]any)
	if !ok {
		t.Fatalf("no items in %v", obj)
	}
	var ks []string
	for _, it := range items {
		ks = append(ks, fmt.Sprint(it.(map[string]any)["key"]))
	}
	return strings.Join(ks, ",")
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

// slowClient sends the headers of a request and part of its body, and never the rest.
func slowClient(t *testing.T, addr, request string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	return c
}
