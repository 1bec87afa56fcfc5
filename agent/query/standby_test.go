package query

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// A standby answers no store query (its state trails the active's) and points at the
// active; key metadata names the active's host, or says it cannot.
func TestStandbyPointsAtTheActive(t *testing.T) {
	f, db := fixtureWithDB(t)
	spec := pipeline.StoreSpec{Name: "counts", Type: pipeline.KeyValueStoreType}
	f.serveStores(db, []pipeline.StoreSpec{spec}, 1)
	standby := stateStandby
	f.agent.state.Store(&standby)
	f.agent.active.Store(&[2]string{"replica-0", "replica-0.example:8080"})
	for _, req := range [][2]string{{"GET", "/v1/stores/counts/keys/k"}, {"GET", "/v1/stores/counts/keys"},
		{"GET", "/v1/stores/counts/count"}, {"POST", "/v2/query"}} {
		body := ""
		if req[0] == "POST" {
			body = `{"store": "counts", "query": {"type": "KeyQuery", "key": "k"}}`
		}
		st, o := f.serve(t, req[0], req[1], body)
		if st != http.StatusServiceUnavailable || o["code"] != "standby" || !strings.Contains(o["error"].(string), "replica-0.example:8080") {
			t.Fatalf("%s %s on a standby: %d %v, want 503 standby naming the active's host", req[0], req[1], st, o)
		}
	}
	if st, o := f.serve(t, "GET", "/v1/metadata/counts/aw==", ""); st != http.StatusOK || o["activeHost"] != "replica-0.example:8080" {
		t.Fatalf("metadata on a standby: %d %v, want the active's host", st, o)
	}
	f.agent.active.Store(&[2]string{"replica-0", ""})
	if st, o := f.serve(t, "GET", "/v1/metadata/counts/aw==", ""); st != http.StatusServiceUnavailable || o["code"] != "not_available" {
		t.Fatalf("metadata on a standby whose active has no application.server: %d %v", st, o)
	}
}
