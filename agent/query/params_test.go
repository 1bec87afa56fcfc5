package query

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/agent/internal/webtest"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
)

// POST /v2/query takes ?isolation= as every query endpoint does, meaning what the body's
// "isolation" means: both may be given if they agree; a bad value is refused as on the
// other endpoints, and two that differ are refused naming both.
func TestIQv2TakesIsolationAsAParameter(t *testing.T) {
	f, db := fixtureWithDB(t)
	str := serdes.String{}
	counts := pipeline.StoreSpec{Name: "counts", Type: pipeline.KeyValueStoreType, Serdes: pipeline.Serdes{Key: str, Value: str}}
	p := pipeline.DefaultPartition([]byte("a"), 1)
	kv, err := db.KeyValueStore(counts, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Put([]byte("a"), []byte("committed"), 0); err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if err := kv.Put([]byte("a"), []byte("buffered"), 0); err != nil {
		t.Fatal(err)
	}
	f.serveRunning(db, []pipeline.StoreSpec{counts}, 1)

	query := func(isolation string) string {
		body := `{"store": "counts", "query": {"type": "KeyQuery", "key": "a"}}`
		if isolation != "" {
			body = fmt.Sprintf(`{"store": "counts", "query": {"type": "KeyQuery", "key": "a"}, "isolation": %q}`, isolation)
		}
		return body
	}
	for _, c := range []struct{ param, body, want string }{
		{"", "", "buffered"},
		{"READ_COMMITTED", "", "committed"},
		{"READ_UNCOMMITTED", "", "buffered"},
		{"", "READ_COMMITTED", "committed"},
		{"READ_COMMITTED", "READ_COMMITTED", "committed"},
	} {
		target := "/v2/query"
		if c.param != "" {
			target += "?isolation=" + c.param
		}
		st, o := f.serve(t, "POST", target, query(c.body))
		results, _ := o["partitionResults"].([]any)
		if st != http.StatusOK || len(results) != 1 || results[0].(map[string]any)["result"] != c.want {
			t.Errorf("POST %s with body isolation %q: %d %v, want the %s value", target, c.body, st, o, c.want)
		}
	}

	_, v1 := f.serve(t, "GET", "/v1/stores/counts/keys/a?isolation=NOTHING", "")
	for _, c := range []struct{ param, body, want string }{
		{"NOTHING", "", fmt.Sprint(v1["error"])},
		{"", "NOTHING", fmt.Sprint(v1["error"])},
		{"NOTHING", "READ_COMMITTED", fmt.Sprint(v1["error"])},
		{"READ_COMMITTED", "READ_UNCOMMITTED", `isolation: the query string's isolation=READ_COMMITTED and the body's "isolation": "READ_UNCOMMITTED" differ`},
	} {
		target := "/v2/query?isolation=" + c.param
		st, o := f.serve(t, "POST", target, query(c.body))
		if msg := fmt.Sprint(o["error"]); st != http.StatusBadRequest || o["code"] != "bad_parameter" || !strings.HasPrefix(msg, c.want) {
			t.Errorf("POST %s with body isolation %q: %d %v, want 400 bad_parameter %q", target, c.body, st, o, c.want)
		}
	}
	if st, o := f.serve(t, "POST", "/v2/query?limit=1", query("")); st != http.StatusBadRequest || !strings.Contains(fmt.Sprint(o["error"]), `unknown parameter "limit" (known: isolation)`) {
		t.Errorf("POST /v2/query?limit=1: %d %v, want 400 naming the parameter it knows", st, o)
	}
}

// An empty range or windows parameter is one left out, on every store, whatever its key
// serde: ?from=&to=&prefix=&reverse=&limit=&after= lists everything, as ?from=&to= on the
// windows does. The empty key stays readable at its own path.
func TestEmptyRangeParametersAreLeftOut(t *testing.T) {
	f := pathsFixture(t)
	all := "/v1/stores/counts/keys"
	_, want := f.serve(t, "GET", all, "")
	if webtest.ItemKeys(t, want) != ",/,a" {
		t.Fatalf("GET %s: %v", all, want)
	}
	for _, q := range []string{
		"?from=&to=&prefix=&reverse=",
		"?from=&to=&prefix=&reverse=&limit=&after=&staleStores=&isolation=",
		"?from=",
		"?to=",
		"?prefix=",
		"?after=",
		"?from=&reverse=false",
	} {
		st, got := f.serve(t, "GET", all+q, "")
		if st != http.StatusOK || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("GET %s%s: %d %v, want %v", all, q, st, got, want)
		}
	}
	for q, keys := range map[string]string{
		"?from=%2F&to=":              "/,a",
		"?from=&to=%2F":              ",/",
		"?from=&to=&reverse=true":    "a,/,",
		"?prefix=&reverse=true":      "a,/,",
		"?from=&to=a&limit=2":        ",/",
		"?prefix=a&from=&to=&after=": "a",
	} {
		st, got := f.serve(t, "GET", all+q, "")
		if st != http.StatusOK || webtest.ItemKeys(t, got) != keys {
			t.Errorf("GET %s%s: %d %v, want the keys %q", all, q, st, got, keys)
		}
	}
	if st, got := f.serve(t, "GET", "/v1/stores/counts/keys/", ""); st != http.StatusOK || got["value"] != "empty" {
		t.Errorf("the empty key: %d %v", st, got)
	}
	_, windows := f.serve(t, "GET", "/v1/stores/clicks/windows/", "")
	for _, q := range []string{"?from=&to=", "?from=&to=&reverse="} {
		if st, got := f.serve(t, "GET", "/v1/stores/clicks/windows/"+q, ""); st != http.StatusOK || fmt.Sprint(got) != fmt.Sprint(windows) {
			t.Errorf("GET /v1/stores/clicks/windows/%s: %d %v, want %v", q, st, got, windows)
		}
	}
	if st, got := f.serve(t, "GET", "/v1/stores/counts/count?isolation=&staleStores=", ""); st != http.StatusOK || fmt.Sprint(got["count"]) != "3" {
		t.Errorf("count with empty parameters: %d %v", st, got)
	}
}

// On a long-keyed store an empty bound is no bound rather than a key that does not parse.
func TestEmptyRangeBoundsOfALongKeyedStore(t *testing.T) {
	f, db := fixtureWithDB(t)
	spec := pipeline.StoreSpec{Name: "longs", Type: pipeline.KeyValueStoreType, Serdes: pipeline.Serdes{Key: serdes.Long{}, Value: serdes.String{}}}
	for _, k := range []int64{1, 2} {
		key, _ := serdes.Long{}.Serialize("", nil, k)
		kv, err := db.KeyValueStore(spec, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := kv.Put(key, []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Commit(nil); err != nil {
		t.Fatal(err)
	}
	f.serveRunning(db, []pipeline.StoreSpec{spec}, 1)
	for q, keys := range map[string]string{"?from=": "1,2", "?from=2&to=": "2", "?from=&to=1": "1", "?after=": "1,2"} {
		st, got := f.serve(t, "GET", "/v1/stores/longs/keys"+q, "")
		if st != http.StatusOK || webtest.ItemKeys(t, got) != keys {
			t.Errorf("GET /v1/stores/longs/keys%s: %d %v, want the keys %s", q, st, got, keys)
		}
	}
	if st, got := f.serve(t, "GET", "/v1/stores/longs/keys?from=x", ""); st != http.StatusBadRequest || got["code"] != "bad_parameter" {
		t.Errorf("from=x: %d %v, want 400", st, got)
	}
}

// Each store of GET /v1/stores reports approximateNumUncommittedBytes: what its partitions
// here buffer of the epoch in progress, as the uncommitted-bytes gauge counts it, and 0 once
// the epoch committed.
func TestStoresReportTheirUncommittedBytes(t *testing.T) {
	f, db := fixtureWithDB(t)
	str := serdes.String{}
	counts := pipeline.StoreSpec{Name: "counts", Type: pipeline.KeyValueStoreType, Serdes: pipeline.Serdes{Key: str, Value: str}}
	idle := pipeline.StoreSpec{Name: "idle", Type: pipeline.KeyValueStoreType, Serdes: pipeline.Serdes{Key: str, Value: str}}
	for p := range int32(2) {
		kv, err := db.KeyValueStore(counts, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := kv.Put([]byte{'k', byte(p)}, []byte("value"), 0); err != nil {
			t.Fatal(err)
		}
	}
	f.serveStores(db, []pipeline.StoreSpec{counts, idle}, 2)
	uncommitted := func() map[string]any {
		st, o := f.serve(t, "GET", "/v1/stores", "")
		list, _ := o["list"].([]any)
		if st != http.StatusOK || len(list) != 2 {
			t.Fatalf("GET /v1/stores: %d %v", st, o)
		}
		out := map[string]any{}
		for _, s := range list {
			m := s.(map[string]any)
			out[fmt.Sprint(m["name"])] = m["approximateNumUncommittedBytes"]
		}
		return out
	}
	want := db.UncommittedBytesByStore()["counts"]
	if want <= 0 {
		t.Fatalf("the buffered writes count %d bytes", want)
	}
	if got := uncommitted(); fmt.Sprint(got["counts"]) != fmt.Sprint(want) || fmt.Sprint(got["idle"]) != "0" {
		t.Errorf("uncommitted bytes %v, want counts %d and idle 0", got, want)
	}
	if err := db.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if got := uncommitted(); fmt.Sprint(got["counts"]) != "0" {
		t.Errorf("uncommitted bytes after the commit %v, want 0", got)
	}
}
