package agent

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/agent/internal/webtest"
	"github.com/stoatflow/stoatflow/agent/query"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
	"github.com/stoatflow/stoatflow/state"
)

// prefixSerde stands for a serde written in Lua: interactive queries cannot call it.
type prefixSerde struct{}

func (prefixSerde) Name() string { return "lua serde defined at p.lua:1" }
func (prefixSerde) Serialize(_ string, _ pipeline.Headers, v any) ([]byte, error) {
	return append([]byte{0xff}, v.(string)...), nil
}
func (prefixSerde) Deserialize(_ string, _ pipeline.Headers, b []byte) (any, error) {
	return string(b[1:]), nil
}

// queryAgent is an agent that never runs: its query endpoints are served in-process over
// a catalogue the test builds.
func queryAgent(t testing.TB) *Agent {
	t.Helper()
	a, err := New(testConfig(t, []string{"127.0.0.1:1"}, "return nil", ""), Options{})
	if err != nil {
		t.Fatal(err)
	}
	a.serveQueries()
	return a
}

func serveQuery(t *testing.T, a *Agent, method, target, body string) (int, map[string]any) {
	t.Helper()
	return webtest.Serve(t, a.http.srv.Handler, method, target, body)
}

func TestQueriesBeforeTheStoresAreReady(t *testing.T) {
	a := queryAgent(t)
	for _, c := range []struct{ method, target, code string }{
		{"GET", "/v1/stores", "not_ready"},
		{"GET", "/v1/stores/counts/keys/k1", "not_ready"},
		{"GET", "/v1/stores/counts/keys", "not_ready"},
		{"POST", "/v2/query", "not_ready"},
		{"GET", "/v1/metadata/counts/k1", "not_available"},
	} {
		body := ""
		if c.method == "POST" {
			body = `{"store":"counts","query":{"type":"KeyQuery","key":"k1"}}`
		}
		st, o := serveQuery(t, a, c.method, c.target, body)
		if st != http.StatusServiceUnavailable || o["code"] != c.code {
			t.Fatalf("%s %s = %d %v, want 503 %s", c.method, c.target, st, o, c.code)
		}
	}
	// REBALANCING answers metadata but the stores are still missing.
	if err := a.state.Transition(StateRebalancing); err != nil {
		t.Fatal(err)
	}
	if st, o := serveQuery(t, a, "GET", "/v1/metadata/counts/k1", ""); st != 503 || o["code"] != "not_ready" {
		t.Fatalf("metadata while restoring = %d %v", st, o)
	}
}

// storesFixture opens a state database with one store of each kind, two partitions each,
// and commits a few entries with changelog offsets.
func storesFixture(t testing.TB) *Agent {
	t.Helper()
	a, db := queryAgentWithDB(t)
	str, long, js, raw := serdes.String{}, serdes.Long{}, serdes.JSON{}, serdes.Bytes{}
	specs := []pipeline.StoreSpec{
		{Name: "hdr", Type: pipeline.TimestampedKeyValueStoreType, Serdes: pipeline.Serdes{Key: str, Value: str}, Headers: true, Logged: true},
		{Name: "lua", Type: pipeline.KeyValueStoreType, Serdes: pipeline.Serdes{Key: prefixSerde{}, Value: str}},
		{Name: "raw", Type: pipeline.KeyValueStoreType, Serdes: pipeline.Serdes{Key: raw, Value: raw}},
		{Name: "sess", Type: pipeline.SessionStoreType, Serdes: pipeline.Serdes{Key: str, Value: long}, Retention: 1000},
		{Name: "vers", Type: pipeline.VersionedKeyValueStoreType, Serdes: pipeline.Serdes{Key: long, Value: js}, HistoryRetention: 1000},
		{Name: "wins", Type: pipeline.TimestampedWindowStoreType, Serdes: pipeline.Serdes{Key: str, Value: long}, WindowSize: 10, Retention: 100, Headers: true, Logged: true},
	}
	const parts = 2
	home := func(key []byte) int32 { return pipeline.DefaultPartition(key, parts) }
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	hdrs := pipeline.Headers{{Key: "trace", Value: []byte("t-1")}, {Key: "bin", Value: []byte{0xff}}}
	for _, k := range []string{"a", "b"} {
		s, err := db.TimestampedKeyValueStore(specs[0], home([]byte(k)))
		check(err)
		check(s.PutWithHeaders([]byte(k), []byte("v-"+k), 7, hdrs))
	}
	l, err := db.KeyValueStore(specs[1], home([]byte{0xff, 'x'}))
	check(err)
	check(l.Put([]byte{0xff, 'x'}, []byte("lua value"), 0))
	r, err := db.KeyValueStore(specs[2], home([]byte{0, 1}))
	check(err)
	check(r.Put([]byte{0, 1}, []byte{2, 3}, 0))
	ss, err := db.SessionStore(specs[3], home([]byte("a")))
	check(err)
	for _, w := range [][2]int64{{10, 20}, {40, 50}} {
		_, err := ss.Put([]byte("a"), w[0], w[1], []byte{0, 0, 0, 0, 0, 0, 0, byte(w[0])}, 0)
		check(err)
	}
	five, _ := long.Serialize("", nil, int64(5))
	vs, err := db.VersionedStore(specs[4], home(five))
	check(err)
	_, err = vs.Put(five, []byte(`{"v":1}`), 100)
	check(err)
	_, err = vs.Put(five, []byte(`{"v":2}`), 200)
	check(err)
	ws, err := db.WindowStore(specs[5], home([]byte("a")))
	check(err)
	for _, start := range []int64{0, 10, 20} {
		v, _ := long.Serialize("", nil, start*2)
		_, err := ws.PutWithHeaders([]byte("a"), start, v, start+1, hdrs)
		check(err)
	}
	wb, err := db.WindowStore(specs[5], home([]byte("b")))
	check(err)
	v, _ := long.Serialize("", nil, int64(99))
	_, err = wb.PutWithHeaders([]byte("b"), 10, v, 11, nil)
	check(err)
	check(db.Commit(map[state.ChangelogPartition]int64{{Store: "wins", Partition: home([]byte("a"))}: 41}))
	serveStores(t, a, db, specs, parts)
	return a
}

// queryAgentWithDB is queryAgent and an empty state database.
func queryAgentWithDB(t testing.TB) (*Agent, *state.DB) {
	t.Helper()
	a := queryAgent(t)
	db, err := state.Open(t.TempDir(), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return a, db
}

// serveStores makes the stores of db the application's, as Run does once they are restored.
func serveStores(t testing.TB, a *Agent, db *state.DB, specs []pipeline.StoreSpec, partitions int32) {
	t.Helper()
	if err := a.state.Transition(StateRebalancing); err != nil {
		t.Fatal(err)
	}
	a.stores.Store(&query.Catalog{DB: db, Specs: specs, Partitions: partitions})
}

func TestQueryWindowSessionVersionedAndBytesStores(t *testing.T) {
	a := storesFixture(t)
	five, _ := serdes.Long{}.Serialize("", nil, int64(5))
	for target, want := range map[string]string{
		"/v1/stores/wins/windows/a?from=0&to=15":                  `[{"key":"a","value":0,"windowEnd":10,"windowStart":0},{"key":"a","value":20,"windowEnd":20,"windowStart":10}]`,
		"/v1/stores/wins/windows/a?reverse=true":                  `[{"key":"a","value":40,"windowEnd":30,"windowStart":20},{"key":"a","value":20,"windowEnd":20,"windowStart":10},{"key":"a","value":0,"windowEnd":10,"windowStart":0}]`,
		"/v1/stores/wins/windows/a?from=1970-01-01T00:00:00.015Z": `[{"key":"a","value":40,"windowEnd":30,"windowStart":20}]`,
		"/v1/stores/wins/windows/b":                               `[{"key":"b","value":99,"windowEnd":20,"windowStart":10}]`,
		"/v1/stores/wins/windows/zz":                              `[]`,
		"/v1/stores/sess/windows/a":                               `[{"key":"a","value":10,"windowEnd":20,"windowStart":10},{"key":"a","value":40,"windowEnd":50,"windowStart":40}]`,
		"/v1/stores/sess/windows/a?from=30&to=60":                 `[{"key":"a","value":40,"windowEnd":50,"windowStart":40}]`,
	} {
		st, o := serveQuery(t, a, "GET", target, "")
		got, _ := json.Marshal(o["items"])
		if st != 200 || string(got) != want {
			t.Fatalf("GET %s = %d %s\nwant %s", target, st, got, want)
		}
	}
	// Every store type is counted; a versioned store ranges over its latest versions.
	for target, want := range map[string]string{
		"/v1/stores/wins/count": `{"count":4}`,
		"/v1/stores/sess/count": `{"count":2}`,
		"/v1/stores/vers/count": `{"count":1}`,
		"/v1/stores/vers/keys":  fmt.Sprintf(`{"items":[{"key":5,"partition":%d,"timestamp":200,"value":{"v":2}}]}`, pipeline.DefaultPartition(five, 2)),
	} {
		st, o := serveQuery(t, a, "GET", target, "")
		got, _ := json.Marshal(o)
		if st != 200 || string(got) != want {
			t.Fatalf("GET %s = %d %s\nwant %s", target, st, got, want)
		}
	}
	for target, want := range map[string]string{
		"/v1/stores/vers/keys/5": `{"key":5,"partition":%P,"timestamp":200,"value":{"v":2}}`,
		"/v1/stores/raw/keys/" + base64.RawURLEncoding.EncodeToString([]byte{0, 1}):                   `{"key":"AAE=","partition":%P,"timestamp":-1,"value":"AgM="}`,
		"/v1/stores/lua/keys/" + url.PathEscape(base64.StdEncoding.EncodeToString([]byte{0xff, 'x'})): `{"key":"/3g=","partition":%P,"timestamp":-1,"value":"lua value"}`,
		"/v1/stores/hdr/keys/a": `{"headers":[{"key":"trace","value":"t-1"},{"key":"bin","valueBase64":"/w=="}],"key":"a","partition":%P,"timestamp":7,"value":"v-a"}`,
	} {
		st, o := serveQuery(t, a, "GET", target, "")
		got, _ := json.Marshal(o)
		want = strings.Replace(want, "%P", fmt.Sprint(o["partition"]), 1)
		if st != 200 || string(got) != want {
			t.Fatalf("GET %s = %d %s\nwant %s", target, st, got, want)
		}
	}
	for target, want := range map[string]string{
		"/v1/stores/wins/keys/a":         "400 wrong_store_type",
		"/v1/stores/vers/keys/x":         "400 bad_parameter",
		"/v1/stores/raw/keys/%21%21":     "400 bad_parameter",
		"/v1/stores/wins/windows/a?to=x": "400 bad_parameter",
		"/v1/stores/vers/windows/5":      "400 wrong_store_type",
		"/v1/stores?isolation=X":         "400 bad_parameter",
	} {
		st, o := serveQuery(t, a, "GET", target, "")
		if got := fmt.Sprint(st, " ", o["code"]); got != want {
			t.Fatalf("GET %s = %s %v, want %s", target, got, o, want)
		}
	}
}

func TestQueryV2WindowSessionVersionedAndHeaders(t *testing.T) {
	a := storesFixture(t)
	winHome := pipeline.DefaultPartition([]byte("a"), 2)
	only := func(store, query string, p int32) map[string]any {
		t.Helper()
		st, o := serveQuery(t, a, "POST", "/v2/query", fmt.Sprintf(`{"store":%q,"query":%s,"partitions":[%d]}`, store, query, p))
		if st != 200 {
			t.Fatalf("%s %s = %d %v", store, query, st, o)
		}
		return o["partitionResults"].([]any)[0].(map[string]any)
	}
	result := func(r map[string]any) string {
		t.Helper()
		if r["success"] != true {
			t.Fatalf("failed: %v", r)
		}
		b, _ := json.Marshal(r["result"])
		return string(b)
	}
	for _, c := range []struct{ store, query, want string }{
		{"wins", `{"type":"WindowKeyQuery","key":"a","timeFrom":5,"timeTo":20}`,
			`[{"value":20,"windowEnd":20,"windowStart":10},{"value":40,"windowEnd":30,"windowStart":20}]`},
		{"wins", `{"type":"WindowRangeQuery","timeFrom":"1970-01-01T00:00:00Z","timeTo":0}`,
			`[{"key":"a","value":0,"windowEnd":10,"windowStart":0}]`},
		{"wins", `{"type":"TimestampedWindowKeyWithHeadersQuery","key":"a","timeFrom":0,"timeTo":0}`,
			`[{"headers":[{"key":"trace","value":"t-1"},{"key":"bin","valueBase64":"/w=="}],"timestamp":1,"value":0,"windowEnd":10,"windowStart":0}]`},
		{"sess", `{"type":"WindowRangeQuery","key":"a"}`,
			`[{"key":"a","value":10,"windowEnd":20,"windowStart":10},{"key":"a","value":40,"windowEnd":50,"windowStart":40}]`},
		{"hdr", `{"type":"TimestampedKeyWithHeadersQuery","key":"a"}`,
			`{"headers":[{"key":"trace","value":"t-1"},{"key":"bin","valueBase64":"/w=="}],"timestamp":7,"value":"v-a"}`},
		{"hdr", `{"type":"KeyQuery","key":"a"}`, `"v-a"`},
		{"hdr", `{"type":"TimestampedRangeWithHeadersQuery","lower":"a","upper":"a"}`,
			`[{"headers":[{"key":"trace","value":"t-1"},{"key":"bin","valueBase64":"/w=="}],"key":"a","timestamp":7,"value":"v-a"}]`},
		{"vers", `{"type":"VersionedKeyQuery","key":5,"asOf":150}`, `{"timestamp":100,"validTo":200,"value":{"v":1}}`},
		{"vers", `{"type":"VersionedKeyQuery","key":"5"}`, `{"timestamp":200,"validTo":null,"value":{"v":2}}`},
		{"vers", `{"type":"KeyQuery","key":5}`, `{"v":2}`},
	} {
		p := winHome
		switch c.store {
		case "hdr":
			p = pipeline.DefaultPartition([]byte("a"), 2)
		case "vers":
			five, _ := serdes.Long{}.Serialize("", nil, int64(5))
			p = pipeline.DefaultPartition(five, 2)
		}
		if got := result(only(c.store, c.query, p)); got != c.want {
			t.Fatalf("%s %s =\n %s\nwant %s", c.store, c.query, got, c.want)
		}
	}
	r := only("wins", `{"type":"WindowKeyQuery","key":"a","timeFrom":0,"timeTo":0}`, winHome)
	if pos, _ := json.Marshal(r["position"]); !strings.Contains(string(pos), fmt.Sprintf(`-wins-changelog":{"%d":41}`, winHome)) {
		t.Fatalf("position %s", pos)
	}
	for _, c := range []struct{ store, query, want string }{
		{"wins", `{"type":"WindowRangeQuery","key":"a"}`, "because WindowStores only supports WindowRangeQuery.withWindowStartRange. Contact the store maintainer"},
		{"sess", `{"type":"WindowRangeQuery","timeFrom":0,"timeTo":5}`, "because SessionStores only support WindowRangeQuery.withKey. Contact the store maintainer"},
		{"sess", `{"type":"WindowKeyQuery","key":"a","timeFrom":0,"timeTo":5}`, "This store (session store sess) doesn't know how to execute the given query (WindowKeyQuery)."},
		{"vers", `{"type":"TimestampedKeyQuery","key":5}`, "(versionedKeyValue store vers)"},
		{"raw", `{"type":"TimestampedRangeWithHeadersQuery"}`, "(keyValue store raw)"},
	} {
		r := only(c.store, c.query, 0)
		if r["failureReason"] != "UNKNOWN_QUERY_TYPE" || !strings.Contains(fmt.Sprint(r["failureMessage"]), c.want) {
			t.Fatalf("%s %s = %v, want UNKNOWN_QUERY_TYPE %q", c.store, c.query, r, c.want)
		}
	}
	for _, c := range []struct{ body, want string }{
		{`{"store":"vers","query":{"type":"MultiVersionedKeyQuery","key":5,"fromTime":2,"toTime":1}}`, "400 bad_parameter"},
		{`{"store":"vers","query":{"type":"MultiVersionedKeyQuery"}}`, "400 bad_parameter"},
		{`{"store":"wins","query":{"type":"WindowKeyQuery","key":"a"}}`, "400 bad_parameter"},
		{`{"store":"wins","query":{"type":"WindowRangeQuery","key":"a","timeFrom":1,"timeTo":2}}`, "400 bad_parameter"},
		{`{"store":"wins","query":{"type":"WindowRangeQuery","timeFrom":"yesterday","timeTo":2}}`, "400 bad_parameter"},
		{`{"store":"vers","query":{"type":"KeyQuery","key":[1]}}`, "400 bad_parameter"},
		{`{"store":"wins","query":{"type":"KeyQuery","key":"a"},"positionBound":{"t":{"x":1}}}`, "400 bad_parameter"},
	} {
		st, o := serveQuery(t, a, "POST", "/v2/query", c.body)
		if got := fmt.Sprint(st, " ", o["code"]); got != c.want {
			t.Fatalf("%s = %s %v, want %s", c.body, got, o, c.want)
		}
	}
	// requireActive outside RUNNING: NOT_ACTIVE.
	_, o := serveQuery(t, a, "POST", "/v2/query", `{"store":"hdr","query":{"type":"KeyQuery","key":"a"},"requireActive":true,"partitions":[0]}`)
	if r := o["partitionResults"].([]any)[0].(map[string]any); r["failureReason"] != "NOT_ACTIVE" {
		t.Fatalf("requireActive while REBALANCING: %v", r)
	}
	// RUNNING, as the agent names it to agent/query, answers it.
	if err := a.state.Transition(StateRunning); err != nil {
		t.Fatal(err)
	}
	_, o = serveQuery(t, a, "POST", "/v2/query", `{"store":"hdr","query":{"type":"KeyQuery","key":"a"},"requireActive":true}`)
	if r := o["partitionResults"].([]any); len(r) != 2 || r[0].(map[string]any)["success"] != true || r[1].(map[string]any)["success"] != true {
		t.Fatalf("requireActive while RUNNING: %v", o)
	}
}

func TestMetadataUsesTheConfiguredHost(t *testing.T) {
	a := storesFixture(t)
	a.cfg.ApplicationServer = "query.example:8080"
	five, _ := serdes.Long{}.Serialize("", nil, int64(5))
	st, o := serveQuery(t, a, "GET", "/v1/metadata/vers/5?header.h=1", "")
	if st != 200 || o["activeHost"] != "query.example:8080" || fmt.Sprint(o["partition"]) != fmt.Sprint(pipeline.DefaultPartition(five, 2)) {
		t.Fatalf("metadata = %d %v", st, o)
	}
	if st, o := serveQuery(t, a, "GET", "/v1/metadata/vers/five", ""); st != 400 || o["code"] != "bad_parameter" {
		t.Fatalf("bad key = %d %v", st, o)
	}
	if st, o := serveQuery(t, a, "GET", "/v1/metadata/vers/5?isolation=X", ""); st != 400 || o["code"] != "bad_parameter" {
		t.Fatalf("bad isolation = %d %v", st, o)
	}
}
