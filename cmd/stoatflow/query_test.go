package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeAgent answers canned JSON per request URI and records what it was asked.
type fakeAgent struct {
	mu      sync.Mutex
	seen    []string
	auth    []string
	answers map[string]string // "METHOD URI" → "status body"
}

func (f *fakeAgent) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := r.Method + " " + r.URL.RequestURI()
	f.mu.Lock()
	f.seen = append(f.seen, strings.TrimSpace(req+" "+string(body)))
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	ans, ok := f.answers[req]
	if !ok {
		ans = `404 {"error":"no endpoint","code":"not_found"}`
	}
	status, payload, _ := strings.Cut(ans, " ")
	code := map[string]int{"200": 200, "400": 400, "404": 404, "503": 503}[status]
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, payload)
}

func startFake(t *testing.T, answers map[string]string) (*fakeAgent, string) {
	t.Helper()
	f := &fakeAgent{answers: answers}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, strings.TrimPrefix(srv.URL, "http://")
}

func TestQueryCommandPrintsAnswers(t *testing.T) {
	f, addr := startFake(t, map[string]string{
		"GET /v1/stores": `200 [{"name":"counts","type":"timestampedKeyValue","keySerde":"string","valueSerde":"long","partitions":3}]`,
		"GET /v1/stores/counts/keys/a%2Fb?isolation=READ_COMMITTED": `200 {"key":"a/b","value":3,"timestamp":1700000000003,"partition":1,"headers":[{"key":"trace","value":"t-1"}]}`,
		"GET /v1/stores/counts/keys?after=k1&limit=2&reverse=true": `200 {"items":[{"key":"k0","value":{"n":1},"timestamp":-1,"partition":0},
{"key":"j 9","value":"x","timestamp":5,"partition":2}],"next":"j 9"}`,
		"GET /v1/stores/counts/count":                    `200 {"count":10}`,
		"GET /v1/stores/wins/windows/-5?from=0&to=10":    `200 {"items":[{"key":-5,"windowStart":0,"windowEnd":10,"value":2}]}`,
		"GET /v1/metadata/counts/k1?header.tenant=a%26b": `200 {"partition":2,"activeHost":"h:1","standbyHosts":["h:2","h:3"]}`,
		"GET /v1/metadata/counts/-5":                     `200 {"partition":0,"activeHost":"h:1","standbyHosts":[]}`,
		"GET /v1/metadata": `200 [{"hostInfo":"h:1","stateStoreNames":["counts","prices"],"storePartitions":{"counts":[0,2],"prices":[0]},"standbyStateStoreNames":["counts"],"standbyStorePartitions":{"counts":[1]}},
{"hostInfo":"h:2","stateStoreNames":[],"storePartitions":{},"standbyStateStoreNames":["counts"],"standbyStorePartitions":{"counts":[0,2]}},
{"hostInfo":"h:3","stateStoreNames":[],"storePartitions":{},"standbyStateStoreNames":[],"standbyStorePartitions":{}}]`,
		"GET /v1/metadata/counts":                        `200 [{"hostInfo":"h:1","stateStoreNames":["counts"],"storePartitions":{"counts":[0,1,2]},"standbyStateStoreNames":[],"standbyStorePartitions":{}}]`,
		"GET /v1/stores/counts/keys/k1?staleStores=true": `200 {"key":"k1","value":3,"timestamp":-1,"partition":1,"lags":{"1":{"currentOffsetPosition":7,"endOffsetPosition":10,"offsetLag":3}}}`,
		"GET /v1/stores/counts/count?staleStores=true":   `200 {"count":10,"lags":{"1":{"currentOffsetPosition":7,"endOffsetPosition":10,"offsetLag":3},"0":{"currentOffsetPosition":2,"endOffsetPosition":2,"offsetLag":0}}}`,
		`POST /v2/query`:                                 `200 {"store":"counts","partitionResults":[],"position":{}}`,
		`POST /v2/query?isolation=READ_COMMITTED`:        `200 {"store":"counts","partitionResults":[],"position":{}}`,
		"GET /v1/stores/counts/keys?from=a&prefix=&to=b": `200 {"items":[{"key":"a","value":1,"timestamp":1,"partition":0}],"error":"disk gone","code":"store_error"}`,
	})
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"stores"}, 0, "NAME    TYPE                 KEY SERDE  VALUE SERDE  PARTITIONS\ncounts  timestampedKeyValue  string     long         3\n"},
		{[]string{"-isolation", "READ_COMMITTED", "get", "counts", "a/b"}, 0,
			"key        a/b\nvalue      3\ntimestamp  2023-11-14T22:13:20.003Z (1700000000003)\npartition  1\nheaders    trace=t-1\n"},
		{[]string{"range", "counts", "-reverse", "-limit", "2", "-after", "k1"}, 0,
			"KEY  VALUE    TIMESTAMP                     PARTITION\nk0   {\"n\":1}  -                             0\nj 9  x        1970-01-01T00:00:00.005Z (5)  2\n(more: add -after 'j 9')\n"},
		{[]string{"count", "counts"}, 0, "10\n"},
		{[]string{"windows", "wins", "-5", "-from", "0", "-to", "10"}, 0,
			"KEY  WINDOW START                  WINDOW END                     VALUE\n-5   1970-01-01T00:00:00.000Z (0)  1970-01-01T00:00:00.010Z (10)  2\n"},
		{[]string{"metadata", "counts", "k1", "-header", "tenant=a&b"}, 0, "partition     2\nactiveHost    h:1\nstandbyHosts  h:2 h:3\n"},
		{[]string{"metadata", "counts", "-5"}, 0, "partition     0\nactiveHost    h:1\nstandbyHosts\n"},
		{[]string{"-stale-stores", "metadata"}, 0, "HOST  STORE   PARTITIONS  STANDBY PARTITIONS\nh:1   counts  0 2         1\nh:1   prices  0           -\nh:2   counts  -           0 2\nh:3   -       -           -\n"},
		{[]string{"metadata", "counts"}, 0, "HOST  STORE   PARTITIONS  STANDBY PARTITIONS\nh:1   counts  0 1 2       -\n"},
		{[]string{"-stale-stores", "get", "counts", "k1"}, 0,
			"key        k1\nvalue      3\ntimestamp  -\npartition  1\nlag        partition 1 3 offsets behind (at 7 of 10)\n"},
		{[]string{"-stale-stores", "count", "counts"}, 0,
			"10\n(read from a standby: partition 0 0 offsets behind (at 2 of 2), partition 1 3 offsets behind (at 7 of 10))\n"},
		{[]string{"-stale-stores", "iqv2", `{"store":"counts"}`}, 0, "{\n  \"store\": \"counts\","},
		{[]string{"iqv2", `{"store":"counts"}`}, 0, "{\n  \"store\": \"counts\",\n  \"partitionResults\": [],\n  \"position\": {}\n}\n"},
		{[]string{"-isolation", "READ_COMMITTED", "iqv2", `{"store":"counts"}`}, 0, "{\n  \"store\": \"counts\","},
		{[]string{"range", "counts", "-from", "a", "-to", "b", "-prefix", ""}, 1, "KEY  VALUE  TIMESTAMP"},
	} {
		code, out, errOut := runCLI(append([]string{"query", "-addr", addr, "-token", "s3cret"}, c.args...)...)
		if code != c.code || !strings.HasPrefix(strings.ReplaceAll(out, "  \n", "\n"), c.out) {
			t.Fatalf("%v: exit %d (want %d)\nout:\n%s\nwant:\n%s\nerr: %s", c.args, code, c.code, out, c.out, errOut)
		}
		if c.code == 1 && !strings.Contains(errOut, "the read stopped: disk gone (store_error") {
			t.Fatalf("%v: err %q", c.args, errOut)
		}
	}
	for _, a := range f.auth {
		if a != "Bearer s3cret" {
			t.Fatalf("authorization %q", a)
		}
	}
	var posts []string
	for _, s := range f.seen {
		if strings.HasPrefix(s, "POST") {
			posts = append(posts, s)
		}
	}
	if want := `[POST /v2/query {"staleStores":true,"store":"counts"} POST /v2/query {"store":"counts"} POST /v2/query?isolation=READ_COMMITTED {"store":"counts"}]`; fmt.Sprint(posts) != want {
		t.Fatalf("iqv2 sent %q, want %s", posts, want)
	}
}

func TestQueryCommandErrors(t *testing.T) {
	_, addr := startFake(t, map[string]string{
		"GET /v1/stores/nope/keys/k": `404 {"error":"Cannot get state store nope because no such store is registered in the topology.","code":"unknown_store"}`,
		"GET /v1/stores":             `503 {"error":"the state stores are not ready","code":"not_ready"}`,
		"GET /v1/stores/wins/keys/k": `400 {"error":"store wins is a timestampedWindow store: key reads need a key-value store; read it with /v1/stores/wins/windows/{key}","code":"wrong_store_type"}`,
	})
	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"get", "nope", "k"}, 1, "stoatflow query: Cannot get state store nope because no such store is registered in the topology. (unknown_store, HTTP 404)"},
		{[]string{"stores"}, 1, "not ready (not_ready, HTTP 503)"},
		{[]string{"get", "wins", "k"}, 1, "stoatflow query: store wins is a timestampedWindow store: get reads key-value stores; read it with stoatflow query windows wins KEY (wrong_store_type, HTTP 400)"},
		{[]string{}, 2, "Usage: stoatflow query"},
		{[]string{"get", "counts"}, 2, "needs STORE KEY"},
		{[]string{"stores", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"range", "counts", "-bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"metadata", "s", "k", "-header", "novalue"}, 2, "is not NAME=VALUE"},
		{[]string{"metadata", "s", "-header", "a=b"}, 2, "-header needs STORE KEY"},
		{[]string{"metadata", "s", "k", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"frob"}, 2, `unknown command "frob"`},
	} {
		code, _, errOut := runCLI(append([]string{"query", "-addr", addr}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.err) {
			t.Fatalf("%v: exit %d (want %d), err %q (want %q)", c.args, code, c.code, errOut, c.err)
		}
	}
	if code, _, errOut := runCLI("query", "-addr", "127.0.0.1:1", "stores"); code != 1 || !strings.Contains(errOut, "connect") {
		t.Fatalf("no agent: exit %d, err %q", code, errOut)
	}
}

// A read redirected to another agent of a streams group (307) is followed, with the token:
// the agents of one application share it.
func TestQueryCommandFollowsRedirectsWithTheToken(t *testing.T) {
	owner, ownerAddr := startFake(t, map[string]string{
		"GET /v1/stores/counts/keys/k1": `200 {"key":"k1","value":3,"timestamp":-1,"partition":1}`,
	})
	// Another host name for the same listener: Go's client keeps the token only for the same host.
	_, port, _ := strings.Cut(ownerAddr, ":")
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "http://localhost:"+port+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	t.Cleanup(other.Close)
	code, out, errOut := runCLI("query", "-addr", strings.TrimPrefix(other.URL, "http://"), "-token", "s3cret", "get", "counts", "k1")
	if code != 0 || !strings.HasPrefix(out, "key        k1\nvalue      3\n") {
		t.Fatalf("exit %d\nout:\n%s\nerr: %s", code, out, errOut)
	}
	if fmt.Sprint(owner.auth) != "[Bearer s3cret]" {
		t.Fatalf("the owner saw authorization %q, want the token", owner.auth)
	}
}
