package query

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/agent/internal/webtest"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
	"github.com/stoatflow/stoatflow/state"
)

// TestQueryGateTurnsAwayBeyondItsBound: with its slots taken, the gate answers at once
// with 503 and Retry-After, and admits again once a slot is free.
func TestQueryGateTurnsAwayBeyondItsBound(t *testing.T) {
	g := newQueryGate(2, 2, time.Minute, writeError)
	entered, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(g.admit(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
		writeJSON(w, http.StatusOK, map[string]string{"status": "done"})
	})))
	defer srv.Close()
	done := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := http.Get(srv.URL)
			if err != nil {
				done <- 0
				return
			}
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		<-entered
	}
	a := get(t, srv.URL)
	wantError(t, a, http.StatusServiceUnavailable, "too_many_queries")
	if a.header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After = %q, want 1", a.header.Get("Retry-After"))
	}
	close(release)
	for range 2 {
		if st := <-done; st != http.StatusOK {
			t.Fatalf("an admitted query answered %d", st)
		}
	}
	go func() { <-entered }()
	if a := get(t, srv.URL); a.status != http.StatusOK {
		t.Errorf("after the slots are free: %d %s", a.status, a.raw)
	}
}

// TestQueryGateDeadline: an admitted query's context ends at agent.http.query.timeout.
func TestQueryGateDeadline(t *testing.T) {
	g := newQueryGate(1, 1, 50*time.Millisecond, writeError)
	ended := make(chan error, 1)
	srv := httptest.NewServer(g.admit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			ended <- r.Context().Err()
		case <-time.After(time.Minute):
			ended <- nil
		}
		e := queryStopped(r.Context())
		writeError(w, e.status, e.code, e.msg)
	})))
	defer srv.Close()
	wantError(t, get(t, srv.URL), http.StatusServiceUnavailable, "query_timeout")
	if err := <-ended; err != context.DeadlineExceeded {
		t.Fatalf("the query's context ended with %v, want the deadline", err)
	}
}

// TestQueryGateSlowBodyHoldsNoSlot: the body is read before a slot is taken, so a client
// that never finishes sending its body does not keep the one slot.
func TestQueryGateSlowBodyHoldsNoSlot(t *testing.T) {
	g := newQueryGate(1, 1, time.Minute, writeError)
	srv := httptest.NewUnstartedServer(g.admit(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "done"})
	})))
	active := make(chan struct{}, 1)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateActive {
			select {
			case active <- struct{}{}:
			default:
			}
		}
	}
	srv.Start()
	defer srv.Close()
	c := webtest.SlowClient(t, srv.Listener.Addr().String(), "POST /v2/query HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	defer c.Close() // before srv.Close, which waits for the request
	<-active
	if a := get(t, srv.URL); a.status != http.StatusOK {
		t.Errorf("with a slow body in flight: %d %s", a.status, a.raw)
	}
}

// TestQueryGateBoundsTheBodiesInFlight: bodies are read before a slot is taken, so the
// gate bounds how many it holds at once (bodiesInFlight, here 1): with that many clients
// sending theirs slowly, a request with a body is turned away after the queue wait instead
// of being read into memory too, and one without a body is still served.
func TestQueryGateBoundsTheBodiesInFlight(t *testing.T) {
	g := newQueryGate(1, 1, time.Minute, writeError)
	g.bodies = make(chan struct{}, 1)
	srv := httptest.NewServer(g.admit(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "done"})
	})))
	defer srv.Close()
	c := webtest.SlowClient(t, srv.Listener.Addr().String(), "POST /v2/query HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
	defer c.Close() // before srv.Close, which waits for the request
	for deadline := time.Now().Add(10 * time.Second); len(g.bodies) < cap(g.bodies); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow body never took its place")
		}
	}
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"store": "s"}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &a.body)
	wantError(t, a, http.StatusServiceUnavailable, "too_many_queries")
	if a.header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After = %q, want 1", a.header.Get("Retry-After"))
	}
	if a := get(t, srv.URL); a.status != http.StatusOK {
		t.Errorf("a request without a body, with the bodies taken: %d %s", a.status, a.raw)
	}
}

// TestQueriesShareTheCPU: a query's CPU token rests three times as long as it was held,
// so queries together keep to a quarter of the CPUs.
func TestQueriesShareTheCPU(t *testing.T) {
	g := newQueryGate(2, 1, time.Minute, writeError)
	type span struct{ start, end time.Time }
	spans := make(chan span, 2)
	srv := httptest.NewServer(g.admit(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s := span{start: time.Now()}
		time.Sleep(20 * time.Millisecond) // stands for 20 ms of work
		s.end = time.Now()
		spans <- s
		writeJSON(w, http.StatusOK, map[string]string{"status": "done"})
	})))
	defer srv.Close()
	done := make(chan answer, 2)
	for range 2 {
		go func() { done <- get(t, srv.URL) }()
	}
	for range 2 {
		if a := <-done; a.status != http.StatusOK {
			t.Fatalf("%d %s", a.status, a.raw)
		}
	}
	first, second := <-spans, <-spans
	if gap, held := second.start.Sub(first.end), first.end.Sub(first.start); gap < queryRest*held {
		t.Errorf("the second query ran %v after the first, which held the CPU for %v: want at least %d times that", gap, held, queryRest)
	}
}

// TestQuerySlowReaderHoldsNoCPUToken: a query blocked writing to a client that does not read
// has given its CPU token back.
func TestQuerySlowReaderHoldsNoCPUToken(t *testing.T) {
	g := newQueryGate(2, 1, time.Minute, writeError)
	srv := httptest.NewServer(g.admit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			chunk := []byte(strings.Repeat("x", 64<<10))
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "done"})
	})))
	defer srv.Close()
	c := webtest.SlowClient(t, srv.Listener.Addr().String(), "GET /big HTTP/1.1\r\nHost: localhost\r\n\r\n")
	defer c.Close() // before srv.Close, which waits for the request
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Get(srv.URL + "/small")
	if err != nil {
		t.Fatalf("a query waited for the CPU token of a query blocked on its client: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// bigStoresFixture serves "big", a key-value store of 3 partitions holding k00000…k02999
// (key i in partition i%3) and "dup" in every partition, and "bigv", a versioned store
// of one partition holding the keys 0…699.
func bigStoresFixture(t *testing.T) (*fixture, *state.DB) {
	t.Helper()
	f, db := fixtureWithDB(t)
	str, long, js := serdes.String{}, serdes.Long{}, serdes.JSON{}
	specs := []pipeline.StoreSpec{
		// JSON values are answered as the stored bytes: a walk must not move on before
		// they are written.
		{Name: "big", Type: pipeline.KeyValueStoreType, Serdes: pipeline.Serdes{Key: str, Value: js}},
		{Name: "bigv", Type: pipeline.VersionedKeyValueStoreType, Serdes: pipeline.Serdes{Key: long, Value: str}, HistoryRetention: 1000},
	}
	for p := int32(0); p < 3; p++ {
		kv := bigStore(t, db, specs[0], p)
		if err := kv.Put([]byte("dup"), []byte(fmt.Sprint(p)), 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3000 {
		if err := bigStore(t, db, specs[0], int32(i%3)).Put([]byte(bigKey(i)), []byte(fmt.Sprintf(`{"i":%d}`, i)), 0); err != nil {
			t.Fatal(err)
		}
	}
	vs, err := db.VersionedStore(specs[1], 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 700 {
		k, _ := long.Serialize("", nil, int64(i))
		if _, err := vs.Put(k, []byte("v"), 10); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Commit(nil); err != nil {
		t.Fatal(err)
	}
	f.serveStores(db, specs, 3)
	return f, db
}

func bigKey(i int) string { return fmt.Sprintf("k%05d", i) }

func bigStore(t *testing.T, db *state.DB, spec pipeline.StoreSpec, p int32) *state.KeyValueStore {
	t.Helper()
	kv, err := db.KeyValueStore(spec, p)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// TestQueryScansAreReadWholeAcrossChunks: scans of many chunks, whose iterators are
// reopened between chunks, read every entry once and in order.
func TestQueryScansAreReadWholeAcrossChunks(t *testing.T) {
	f, _ := bigStoresFixture(t)
	want := []string{"dup", "dup", "dup"}
	for i := range 3000 {
		want = append(want, bigKey(i))
	}
	st, o := f.serve(t, "GET", "/v1/stores/big/keys?limit=10000", "")
	if got := webtest.ItemKeys(t, o); st != 200 || got != strings.Join(want, ",") || o["next"] != nil {
		t.Fatalf("range: %d, %d keys (want %d), next %v", st, strings.Count(got, ",")+1, len(want), o["next"])
	}
	slices.Reverse(want)
	st, o = f.serve(t, "GET", "/v1/stores/big/keys?limit=10000&reverse=true", "")
	if got := webtest.ItemKeys(t, o); st != 200 || got != strings.Join(want, ",") {
		t.Fatalf("reverse range: %d, %d keys (want %d)", st, strings.Count(got, ",")+1, len(want))
	}
	if st, o := f.serve(t, "GET", "/v1/stores/big/count", ""); st != 200 || fmt.Sprint(o["count"]) != "3003" {
		t.Fatalf("count = %d %v", st, o)
	}
	for _, desc := range []bool{false, true} {
		st, o := f.serve(t, "POST", "/v2/query", fmt.Sprintf(`{"store":"big","partitions":[1],"query":{"type":"RangeQuery","descending":%t}}`, desc))
		res := o["partitionResults"].([]any)[0].(map[string]any)
		var keys []string
		for _, it := range res["result"].([]any) {
			item := it.(map[string]any)
			k := fmt.Sprint(item["key"])
			if v := fmt.Sprint(item["value"]); k != "dup" && v != fmt.Sprintf("map[i:%d]", keyIndex(k)) {
				t.Fatalf("IQv2 range: key %s has value %s", k, v)
			}
			keys = append(keys, k)
		}
		var part1 []string
		for i := 1; i < 3000; i += 3 {
			part1 = append(part1, bigKey(i))
		}
		part1 = append([]string{"dup"}, part1...)
		if desc {
			slices.Reverse(part1)
		}
		if st != 200 || res["success"] != true || !slices.Equal(keys, part1) {
			t.Fatalf("IQv2 range (descending %t): %d %v, %d keys (want %d)", desc, st, res["failureMessage"], len(keys), len(part1))
		}
	}
	st, o = f.serve(t, "POST", "/v2/query", `{"store":"bigv","partitions":[0],"query":{"type":"RangeQuery","lower":100}}`)
	res := o["partitionResults"].([]any)[0].(map[string]any)
	if items, _ := res["result"].([]any); st != 200 || len(items) != 600 || fmt.Sprint(items[599].(map[string]any)["key"]) != "699" {
		t.Fatalf("versioned range: %d %v, %d items", st, res["failureMessage"], len(items))
	}
}

// TestQueryScansReleaseTheirSnapshot: a scan does not keep reading the LevelDB snapshot it
// started on; after its iterators are reopened it sees what was committed since, as a
// paginated read would.
func TestQueryScansReleaseTheirSnapshot(t *testing.T) {
	f, db := bigStoresFixture(t)
	s, e := f.sv.lookupStore("big")
	if e != nil {
		t.Fatal(e)
	}
	m, err := s.openMerge(pacerOf(context.Background()), state.ReadCommitted, []int32{0, 1, 2}, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	var got []string
	read := func(n int) {
		for i := m.head(); i >= 0 && n != 0; i = m.head() {
			got = append(got, string(m.its[i].Key()))
			m.advance(i)
			n--
		}
		if m.err != nil {
			t.Fatal(m.err)
		}
	}
	read(10)
	// The entry a partition's iterator stands on, not read yet, and one far ahead are
	// deleted; a key is added ahead.
	standing := string(m.its[1].Key())
	spec := f.agent.Stores().Specs[0]
	for _, k := range []string{standing, bigKey(2000)} {
		if err := bigStore(t, db, spec, int32(keyIndex(k)%3)).Delete([]byte(k), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := bigStore(t, db, spec, 0).Put([]byte(bigKey(2000)+"x"), []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(nil); err != nil {
		t.Fatal(err)
	}
	m.reseat()
	read(-1)
	for _, k := range []string{standing, bigKey(2000)} {
		if slices.Contains(got, k) {
			t.Errorf("the scan read %s, deleted and committed before it got there", k)
		}
	}
	if !slices.Contains(got, bigKey(2000)+"x") {
		t.Error("the scan missed a key committed ahead of it")
	}
	if len(got) != 3003-2+1 || !slices.IsSorted(got) {
		t.Errorf("the scan read %d entries (want %d), sorted %t", len(got), 3003-2+1, slices.IsSorted(got))
	}
}

func keyIndex(k string) int {
	var i int
	_, _ = fmt.Sscanf(k, "k%05d", &i)
	return i
}

// TestQueryScansStopAtTheDeadline: a scan past its deadline ends within a chunk and says why;
// one whose client went away ends too.
func TestQueryScansStopAtTheDeadline(t *testing.T) {
	f, _ := bigStoresFixture(t)
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	gone, leave := context.WithCancel(context.Background())
	leave()
	serve := func(ctx context.Context, method, target, body string, h apiHandler) (*httptest.ResponseRecorder, *apiError) {
		r := webtest.Request(method, target, body).WithContext(ctx)
		r.SetPathValue("store", "big")
		rec := httptest.NewRecorder()
		return rec, h(rec, r)
	}
	if _, e := serve(expired, "GET", "/v1/stores/big/count", "", f.sv.countKeys); e == nil || e.code != "query_timeout" || e.status != 503 {
		t.Errorf("count past the deadline: %v", e)
	}
	if _, e := serve(gone, "GET", "/v1/stores/big/count", "", f.sv.countKeys); e == nil || e.code != "query_cancelled" {
		t.Errorf("count with the client gone: %v", e)
	}
	rec, e := serve(expired, "GET", "/v1/stores/big/keys?limit=10000", "", f.sv.rangeKeys)
	var page struct {
		Items       []any
		Error, Code string
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); e != nil || err != nil || page.Code != "query_timeout" || len(page.Items) > scanChunk {
		t.Errorf("range past the deadline: %v %v, code %q after %d items", e, err, page.Code, len(page.Items))
	}
	rec, e = serve(expired, "POST", "/v2/query", `{"store":"big","query":{"type":"RangeQuery"}}`, f.sv.queryV2)
	body, _ := io.ReadAll(rec.Body)
	if e != nil || strings.Count(string(body), `"failureReason":"STORE_EXCEPTION"`) != 3 || !strings.Contains(string(body), "agent.http.query.timeout") {
		t.Errorf("IQv2 range past the deadline: %v %s", e, body)
	}
}
