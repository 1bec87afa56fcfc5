package query

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/agent/internal/webtest"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
)

// spreadFixture is an agent of a streams group running partitions 0 and 2 of the store
// counts (4 partitions), another agent (b.example:9464) running 1 and 3; each partition holds
// one key, named after it. It returns a key of each partition.
func spreadFixture(t *testing.T) (*fixture, [4]string) {
	t.Helper()
	f, db := fixtureWithDB(t)
	str := serdes.String{}
	spec := pipeline.StoreSpec{Name: "counts", Type: pipeline.KeyValueStoreType, Serdes: pipeline.Serdes{Key: str, Value: str}}
	var keys [4]string
	for i := 0; keys[0] == "" || keys[1] == "" || keys[2] == "" || keys[3] == ""; i++ {
		k := fmt.Sprintf("k%d", i)
		if p := pipeline.DefaultPartition([]byte(k), 4); keys[p] == "" {
			keys[p] = k
			kv, err := db.KeyValueStore(spec, p)
			if err != nil {
				t.Fatal(err)
			}
			if err := kv.Put([]byte(k), []byte(fmt.Sprint("in ", p)), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Commit(nil); err != nil {
		t.Fatal(err)
	}
	f.serveRunning(db, []pipeline.StoreSpec{spec}, 4)
	f.agent.local.Store(&map[int32]bool{0: true, 2: true})
	f.agent.placement.Store(NewPlacement("a.example:9464", map[string]map[string][]int32{
		"a.example:9464": {"counts": {0, 2}}, "b.example:9464": {"counts": {1, 3}},
	}))
	return f, keys
}

// raw serves a request in-process and returns the recorded answer, headers included.
func (f *fixture) raw(method, target, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	f.mux.ServeHTTP(rec, webtest.Request(method, target, body))
	return rec
}

// In a streams group, a key read of a partition another agent runs is redirected there
// (307, the same path and query); this agent's partitions answer; key metadata names the
// agent running the key's partition.
func TestSpreadKeyReadsRedirectToTheOwner(t *testing.T) {
	f, keys := spreadFixture(t)
	for _, p := range []int{1, 3} {
		target := "/v1/stores/counts/keys/" + keys[p] + "?isolation=READ_COMMITTED"
		rec := f.raw("GET", target, "")
		var body map[string]string
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != http.StatusTemporaryRedirect || rec.Header().Get("Location") != "http://b.example:9464"+target || body["code"] != "redirect" ||
			!strings.Contains(body["error"], "b.example:9464") {
			t.Errorf("GET of a key of partition %d: %d %v %s, want 307 to b.example:9464", p, rec.Code, rec.Header(), rec.Body)
		}
		if st, o := f.serve(t, "GET", "/v1/metadata/counts/"+keys[p], ""); st != http.StatusOK || o["activeHost"] != "b.example:9464" ||
			fmt.Sprint(o["partition"]) != fmt.Sprint(p) || fmt.Sprint(o["standbyHosts"]) != "[]" {
			t.Errorf("metadata of a key of partition %d: %d %v", p, st, o)
		}
	}
	for _, p := range []int{0, 2} {
		if st, o := f.serve(t, "GET", "/v1/stores/counts/keys/"+keys[p], ""); st != http.StatusOK || o["value"] != fmt.Sprint("in ", p) {
			t.Errorf("GET of a key of local partition %d: %d %v", p, st, o)
		}
		if st, o := f.serve(t, "GET", "/v1/metadata/counts/"+keys[p], ""); st != http.StatusOK || o["activeHost"] != "a.example:9464" {
			t.Errorf("metadata of a key of local partition %d: %d %v", p, st, o)
		}
	}
	// A key not found here: the other agents' partitions were not searched, and it says so.
	absent := ""
	for i := 0; absent == ""; i++ {
		if k := fmt.Sprintf("absent%d", i); pipeline.DefaultPartition([]byte(k), 4) == 0 {
			absent = k
		}
	}
	st, o := f.serve(t, "GET", "/v1/stores/counts/keys/"+absent, "")
	if st != http.StatusNotFound || !strings.Contains(fmt.Sprint(o["error"]), "its 2 partitions other agents of the streams group run were not searched") {
		t.Errorf("GET of an absent key: %d %v", st, o)
	}
}

// While the owner cannot be named — before the first assignment, a task being moved, a
// task moving here — key reads and metadata answer 503 not_available.
func TestSpreadUnknownOwnerIsNotAvailable(t *testing.T) {
	f, keys := spreadFixture(t)
	f.agent.placement.Store(NewPlacement("a.example:9464", map[string]map[string][]int32{
		"a.example:9464": {"counts": {0, 1, 2}},
	}))
	for target, want := range map[string]string{
		"/v1/stores/counts/keys/" + keys[1]: "is moving to this agent",
		"/v1/stores/counts/keys/" + keys[3]: "no agent of the streams group with an application.server runs partition 3",
		"/v1/metadata/counts/" + keys[3]:    "no agent of the streams group with an application.server runs partition 3",
	} {
		if st, o := f.serve(t, "GET", target, ""); st != http.StatusServiceUnavailable || o["code"] != "not_available" || !strings.Contains(fmt.Sprint(o["error"]), want) {
			t.Errorf("GET %s: %d %v, want 503 not_available saying %q", target, st, o, want)
		}
	}
	f.agent.placement.Store(nil)
	f.agent.local.Store(&map[int32]bool{})
	for _, target := range []string{"/v1/stores/counts/keys/" + keys[0], "/v1/metadata/counts/" + keys[0], "/v1/metadata", "/v1/metadata/counts"} {
		if st, o := f.serve(t, "GET", target, ""); st != http.StatusServiceUnavailable || o["code"] != "not_available" ||
			!strings.Contains(fmt.Sprint(o["error"]), "before the first assignment") {
			t.Errorf("GET %s before the first assignment: %d %v", target, st, o)
		}
	}
}

// IQv2 answers this agent's partitions and fails the others NOT_PRESENT naming the agent
// that runs them; a query of none of this agent's partitions is redirected.
func TestSpreadIQv2AnswersLocalPartitions(t *testing.T) {
	f, keys := spreadFixture(t)
	body := fmt.Sprintf(`{"store": "counts", "query": {"type": "KeyQuery", "key": %q}}`, keys[0])
	st, o := f.serve(t, "POST", "/v2/query", body)
	if st != http.StatusOK {
		t.Fatalf("IQv2 of every partition: %d %v", st, o)
	}
	results := o["partitionResults"].([]any)
	if len(results) != 4 {
		t.Fatalf("results %v", results)
	}
	for p, r := range results {
		res := r.(map[string]any)
		switch p {
		case 0:
			if res["success"] != true || res["result"] != "in 0" {
				t.Errorf("partition 0: %v", res)
			}
		case 2:
			if res["success"] != true || res["result"] != nil {
				t.Errorf("partition 2: %v", res)
			}
		default:
			if res["success"] != false || res["failureReason"] != failNotPresent ||
				!strings.Contains(fmt.Sprint(res["failureMessage"]), fmt.Sprintf("the agent at b.example:9464 runs it: query partition %d there", p)) {
				t.Errorf("partition %d: %v, want NOT_PRESENT naming b.example:9464", p, res)
			}
		}
	}
	rec := f.raw("POST", "/v2/query", `{"store": "counts", "partitions": [3, 1], "query": {"type": "KeyQuery", "key": "x"}}`)
	if rec.Code != http.StatusTemporaryRedirect || rec.Header().Get("Location") != "http://b.example:9464/v2/query" {
		t.Errorf("IQv2 of partitions 1 and 3: %d %v %s, want 307 to b.example:9464", rec.Code, rec.Header(), rec.Body)
	}
}

// GET /v1/metadata lists every agent with the store partitions it runs; /v1/metadata/{store}
// those holding the store.
func TestAllMetadataListsEveryAgent(t *testing.T) {
	f, _ := spreadFixture(t)
	want := `[{"hostInfo":"a.example:9464","stateStoreNames":["counts"],"storePartitions":{"counts":[0,2]},"standbyStateStoreNames":[],"standbyStorePartitions":{}},` +
		`{"hostInfo":"b.example:9464","stateStoreNames":["counts"],"storePartitions":{"counts":[1,3]},"standbyStateStoreNames":[],"standbyStorePartitions":{}}]`
	for _, target := range []string{"/v1/metadata", "/v1/metadata/counts"} {
		if got := strings.TrimSpace(f.raw("GET", target, "").Body.String()); got != want {
			t.Errorf("GET %s:\n%s\nwant\n%s", target, got, want)
		}
	}
	if st, o := f.serve(t, "GET", "/v1/metadata/cuonts", ""); st != http.StatusNotFound || o["code"] != "unknown_store" {
		t.Errorf("metadata of an unknown store: %d %v", st, o)
	}
	// The single-active mode: the active agent runs every partition, the warm standbys keep
	// copies of the logged stores.
	f.agent.local.Store(nil)
	f.agent.standbyHosts = []string{"c.example:9464"}
	c := f.agent.stores.Load()
	c.Specs[0].Logged = true
	want = `[{"hostInfo":"localhost:9464","stateStoreNames":["counts"],"storePartitions":{"counts":[0,1,2,3]},"standbyStateStoreNames":[],"standbyStorePartitions":{}},` +
		`{"hostInfo":"c.example:9464","stateStoreNames":[],"storePartitions":{},"standbyStateStoreNames":["counts"],"standbyStorePartitions":{"counts":[0,1,2,3]}}]`
	if got := strings.TrimSpace(f.raw("GET", "/v1/metadata", "").Body.String()); got != want {
		t.Errorf("GET /v1/metadata in the single-active mode:\n%s\nwant\n%s", got, want)
	}
}
