package query

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
)

// fanStore is the store the fan-out tests read: string keys, 4 partitions.
var fanStore = pipeline.StoreSpec{Name: "counts", Type: pipeline.KeyValueStoreType, Serdes: pipeline.Serdes{Key: serdes.String{}, Value: serdes.String{}}}

// hdrStore is a second store: long keys (negative ones sort after the others in serialised
// byte order), JSON values, record headers.
var hdrStore = pipeline.StoreSpec{Name: "hdr", Type: pipeline.TimestampedKeyValueStoreType, Serdes: pipeline.Serdes{Key: serdes.Long{}, Value: serdes.JSON{}}, Headers: true}

// fanKeys are the fan-out tests' entries by partition: 120 keys, each in its default
// partition, "dup" in every partition (custom-partitioned input), which a range lists
// once per partition, in partition order, and the empty key in partitions 1 and 2 (one on
// each agent of fanPair), which no page may end on.
func fanKeys() map[int32][]string {
	out := map[int32][]string{}
	for i := range 120 {
		k := fmt.Sprintf("w%03d", i)
		p := pipeline.DefaultPartition([]byte(k), 4)
		out[p] = append(out[p], k)
	}
	for p := range int32(4) {
		out[p] = append(out[p], "dup")
	}
	out[1] = append(out[1], "")
	out[2] = append(out[2], "")
	return out
}

// fanAgent is a fixture holding the given partitions of fanStore, served over HTTP.
func fanAgent(t *testing.T, opts Options, parts ...int32) (*fixture, *httptest.Server) {
	t.Helper()
	f, db := fixtureWithOptions(t, opts)
	keys := fanKeys()
	for _, p := range parts {
		kv, err := db.KeyValueStore(fanStore, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys[p] {
			if err := kv.Put([]byte(k), []byte(fmt.Sprintf("%s in %d", k, p)), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := int64(-30); i < 30; i++ {
		k, _ := serdes.Long{}.Serialize("", nil, i)
		if p := pipeline.DefaultPartition(k, 4); slices.Contains(parts, p) {
			kv, err := db.TimestampedKeyValueStore(hdrStore, p)
			if err != nil {
				t.Fatal(err)
			}
			hs := pipeline.Headers{{Key: "n", Value: []byte(fmt.Sprint(i))}, {Key: "raw", Value: []byte{0xff, byte(i)}}}
			if err := kv.PutWithHeaders(k, []byte(fmt.Sprintf(`{"i":%d,"s":"<%d>"}`, i, p)), 1000+i, hs); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Commit(nil); err != nil {
		t.Fatal(err)
	}
	f.serveRunning(db, []pipeline.StoreSpec{fanStore, hdrStore}, 4)
	srv := httptest.NewServer(f.mux)
	t.Cleanup(srv.Close)
	return f, srv
}

// fanPair is two agents of a streams group, a running partitions 0 and 2, b 1 and 3, both
// knowing the placement; wrap, when set, sees every request b is sent. It also returns an
// agent holding every partition alone, whose answers the pair's must equal.
func fanPair(t *testing.T, opts Options, wrap func(http.Handler) http.Handler) (a, b, alone *httptest.Server, fa, fb *fixture) {
	t.Helper()
	fa, a = fanAgent(t, opts, 0, 2)
	fb, b = fanAgent(t, opts, 1, 3)
	if wrap != nil {
		b.Config.Handler = wrap(fb.mux)
	}
	hostA, hostB := strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://")
	hosts := map[string]map[string][]int32{hostA: {"counts": {0, 2}, "hdr": {0, 2}}, hostB: {"counts": {1, 3}, "hdr": {1, 3}}}
	fa.agent.local.Store(&map[int32]bool{0: true, 2: true})
	fb.agent.local.Store(&map[int32]bool{1: true, 3: true})
	fa.agent.placement.Store(NewPlacement(hostA, hosts))
	fb.agent.placement.Store(NewPlacement(hostB, hosts))
	_, alone = fanAgent(t, opts, 0, 1, 2, 3)
	return a, b, alone, fa, fb
}

func getBody(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// A range or count asked of either agent of a streams group reads the other agent's
// partitions there and answers exactly what one agent holding every partition answers:
// the same items in the same order, pages cut at the same keys, the same count.
func TestFanOutMergesAsOneAgent(t *testing.T) {
	a, b, alone, _, _ := fanPair(t, testOptions, nil)
	queries := []string{
		"/v1/stores/counts/keys",
		"/v1/stores/counts/keys?reverse=true",
		"/v1/stores/counts/keys?from=w010&to=w050",
		"/v1/stores/counts/keys?from=w010&to=w050&reverse=true&limit=5",
		"/v1/stores/counts/keys?prefix=w1",
		"/v1/stores/counts/keys?prefix=w0&limit=3",
		"/v1/stores/counts/keys?from=dup&limit=2",
		"/v1/stores/counts/keys?isolation=READ_COMMITTED&limit=1",
		"/v1/stores/counts/keys?from=&to=&prefix=&reverse=&limit=&after=",
		"/v1/stores/counts/keys?from=w010&to=&limit=5",
		"/v1/stores/hdr/keys?from=&to=-3",
		"/v1/stores/counts/count",
		"/v1/stores/counts/count?isolation=READ_COMMITTED",
		"/v1/stores/hdr/keys",
		"/v1/stores/hdr/keys?reverse=true&limit=4",
		"/v1/stores/hdr/keys?from=-3&limit=5",
		"/v1/stores/hdr/count",
	}
	for _, q := range queries {
		st, want := getBody(t, alone.URL+q)
		if st != http.StatusOK {
			t.Fatalf("GET %s alone: %d %s", q, st, want)
		}
		for _, agent := range []*httptest.Server{a, b} {
			if st, got := getBody(t, agent.URL+q); st != http.StatusOK || got != want {
				t.Errorf("GET %s at %s: %d\n%s\nwant\n%s", q, agent.URL, st, got, want)
			}
		}
	}
	// Paging through every key 7 at a time, or 1, reads each item once, as alone.
	page := func(base string, limit int) []string {
		var out []string
		after := ""
		for range 200 {
			u := fmt.Sprintf("%s/v1/stores/counts/keys?limit=%d", base, limit)
			if after != "" {
				u += "&after=" + url.QueryEscape(after)
			}
			st, body := getBody(t, u)
			var pg Page[KVItem]
			if err := json.Unmarshal([]byte(body), &pg); st != http.StatusOK || err != nil {
				t.Fatalf("GET %s: %d %s %v", u, st, body, err)
			}
			for _, it := range pg.Items {
				out = append(out, fmt.Sprint(it.Key, "@", it.Partition))
			}
			if after = pg.Next; after == "" {
				return out
			}
		}
		t.Fatalf("paging %s did not end", base)
		return nil
	}
	for _, limit := range []int{7, 1} {
		want := page(alone.URL, limit)
		if len(want) != 126 {
			t.Fatalf("paging alone %d at a time read %d items, want 126", limit, len(want))
		}
		for _, agent := range []*httptest.Server{a, b} {
			if got := page(agent.URL, limit); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("paging at %s %d at a time:\n%v\nwant\n%v", agent.URL, limit, got, want)
			}
		}
	}
}

// The other agent is asked for its partitions only (PartitionsParam), with the caller's
// token, the isolation level this agent resolved and staleStores; it answers without
// forwarding again, and refuses partitions it does not hold.
func TestFanOutForwardsOnceWithTheCallersParameters(t *testing.T) {
	var mu sync.Mutex
	var seen []*http.Request
	a, b, _, _, _ := fanPair(t, testOptions, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Clone(context.Background()))
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
	})
	req, _ := http.NewRequest("GET", a.URL+"/v1/stores/counts/count?staleStores=true", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != `{"count":126}` {
		t.Fatalf("count: %d %s", resp.StatusCode, body)
	}
	if len(seen) != 1 {
		t.Fatalf("b was sent %d requests, want 1", len(seen))
	}
	r := seen[0]
	q := r.URL.Query()
	if r.URL.Path != "/v1/stores/counts/count" || r.Header.Get("Authorization") != "Bearer s3cret" || q.Get(PartitionsParam) != "1,3" ||
		q.Get("isolation") != "READ_UNCOMMITTED" || q.Get(StaleParam) != "true" {
		t.Errorf("b was sent %s %v", r.URL, r.Header)
	}
	// A read restricted to partitions is answered here or refused: never sent on.
	for _, target := range []string{"/v1/stores/counts/count?partitions=1", "/v1/stores/counts/keys?partitions=0,1"} {
		st, body := getBody(t, a.URL+target)
		if st != http.StatusServiceUnavailable || !strings.Contains(body, "does not process partition 1 of store counts") {
			t.Errorf("GET %s: %d %s, want 503 for a partition a does not hold", target, st, body)
		}
	}
	if len(seen) != 1 {
		t.Errorf("b was sent %d requests, want none more", len(seen))
	}
	// Restricted, items carry their serialised keys for the merge.
	if st, body := getBody(t, b.URL+"/v1/stores/counts/keys?partitions=1&prefix=dup"); st != http.StatusOK ||
		!strings.Contains(body, `"partition":1,"rawKey":"ZHVw"`) {
		t.Errorf("restricted range: %d %s", st, body)
	}
	if st, body := getBody(t, b.URL+"/v1/stores/counts/keys?partitions=4"); st != http.StatusBadRequest || !strings.Contains(body, "not a partition of store counts") {
		t.Errorf("partitions=4: %d %s", st, body)
	}
}

// An agent that does not answer, answers an error, or does not answer in time, and a
// partition no agent can be named for, fail the read with 503 not_available naming the
// partitions and the agent: never a partial answer.
func TestFanOutNeverAnswersPartially(t *testing.T) {
	a, b, _, fa, fb := fanPair(t, testOptions, nil)
	hostA, hostB := strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://")
	placed := NewPlacement(hostA, map[string]map[string][]int32{hostA: {"counts": {0, 2}}, hostB: {"counts": {1, 3}}})
	for _, target := range []string{"/v1/stores/counts/keys", "/v1/stores/counts/count"} {
		fa.agent.placement.Store(placed)
		// b has lost partition 3 and a does not know yet.
		fb.agent.local.Store(&map[int32]bool{1: true})
		st, body := getBody(t, a.URL+target)
		want := "partitions [1 3] of store counts are not available: the agent at " + hostB + " that runs them answered 503 Service Unavailable"
		if st != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"not_available"`) || !strings.Contains(body, want) ||
			!strings.Contains(body, "does not process partition 3") {
			t.Errorf("GET %s, b refusing: %d %s", target, st, body)
		}
		fb.agent.local.Store(&map[int32]bool{1: true, 3: true})
		// Nobody runs partition 3.
		fa.agent.placement.Store(NewPlacement(hostA, map[string]map[string][]int32{hostA: {"counts": {0, 2}}, hostB: {"counts": {1}}}))
		if st, body := getBody(t, a.URL+target); st != http.StatusServiceUnavailable || !strings.Contains(body, "runs partition 3 of store counts") {
			t.Errorf("GET %s, partition 3 unowned: %d %s", target, st, body)
		}
	}
	b.Close()
	fa.agent.placement.Store(placed)
	for _, target := range []string{"/v1/stores/counts/keys", "/v1/stores/counts/count"} {
		st, body := getBody(t, a.URL+target)
		if st != http.StatusServiceUnavailable || !strings.Contains(body, "partitions [1 3] of store counts are not available: the agent at "+hostB+" that runs them did not answer") {
			t.Errorf("GET %s, b down: %d %s", target, st, body)
		}
	}
}

// An agent that hangs fails the read at the query's deadline, named.
func TestFanOutWaitsForAnAgentUntilTheDeadline(t *testing.T) {
	opts := testOptions
	opts.Timeout = 300 * time.Millisecond
	a, b, _, _, _ := fanPair(t, opts, func(http.Handler) http.Handler {
		return http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	})
	start := time.Now()
	st, body := getBody(t, a.URL+"/v1/stores/counts/count")
	if st != http.StatusServiceUnavailable || !strings.Contains(body, "the agent at "+strings.TrimPrefix(b.URL, "http://")+
		" that runs them did not answer before the query's deadline (agent.http.query.timeout)") {
		t.Errorf("count with b hanging: %d %s", st, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the count took %v", d)
	}
}

// A read that fails here answers at once, without waiting for the other agents.
func TestFanOutFailingHereDoesNotWaitForTheOthers(t *testing.T) {
	a, _, _, fa, _ := fanPair(t, testOptions, func(http.Handler) http.Handler {
		return http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	})
	if err := fa.agent.stores.Load().DB.Close(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	st, body := getBody(t, a.URL+"/v1/stores/counts/count")
	if st != http.StatusInternalServerError || !strings.Contains(body, "store_error") {
		t.Errorf("count with a's store closed: %d %s", st, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the failed count took %v, waiting for b", d)
	}
}

// With staleStores, standby copies answer here and at the other agents, and the answer
// gives the lags of every copy read, those of the other agents' too (after their items,
// which a page cut at its limit reads to the end for them).
func TestFanOutGivesEveryAgentsLags(t *testing.T) {
	a, _, _, fa, fb := fanPair(t, testOptions, nil)
	// a keeps a copy of partition 1 (empty: its DB holds none of it); partition 3 is moving away from b, which keeps a copy.
	fa.agent.copies.Store(&map[int32]LagInfo{1: {CurrentOffsetPosition: 5, EndOffsetPosition: 10, OffsetLag: 5}})
	fb.agent.local.Store(&map[int32]bool{1: true})
	fb.agent.copies.Store(&map[int32]LagInfo{3: {CurrentOffsetPosition: 3, EndOffsetPosition: 10, OffsetLag: 7}})
	lags := `"lags":{"1":{"currentOffsetPosition":5,"endOffsetPosition":10,"offsetLag":5},"3":{"currentOffsetPosition":3,"endOffsetPosition":10,"offsetLag":7}}`
	for _, target := range []string{"/v1/stores/counts/keys?staleStores=true&limit=2", "/v1/stores/counts/count?staleStores=true"} {
		if st, body := getBody(t, a.URL+target); st != http.StatusOK || !strings.Contains(body, lags) {
			t.Errorf("GET %s: %d %s, want %s", target, st, body, lags)
		}
	}
	// Without staleStores, the partition b no longer runs fails the read.
	if st, body := getBody(t, a.URL+"/v1/stores/counts/count"); st != http.StatusServiceUnavailable || !strings.Contains(body, "partitions [1 3]") {
		t.Errorf("count without staleStores: %d %s", st, body)
	}
}

// With staleStores, a partition no agent runs now (its agent died and the group has not
// moved its task yet) is read from another agent's standby copy, with that copy's lag: the
// answer is one agent's, as alone. Without staleStores it still fails the read, and a
// partition whose agent is named but does not answer is never read from a copy instead.
func TestFanOutReadsAPartitionNoAgentRunsFromAStandby(t *testing.T) {
	a, b, alone, fa, fb := fanPair(t, testOptions, nil)
	hostA, hostB, _, standbys := partitionThreesAgentDied(a, b, fa, fb)
	lags := `{"3":{"currentOffsetPosition":3,"endOffsetPosition":10,"offsetLag":7}}`
	for _, q := range []string{
		"/v1/stores/counts/keys",
		"/v1/stores/counts/keys?reverse=true&limit=5",
		"/v1/stores/counts/keys?from=dup&limit=2",
		"/v1/stores/counts/count",
	} {
		st, want := getBody(t, alone.URL+q)
		if st != http.StatusOK {
			t.Fatalf("GET %s alone: %d %s", q, st, want)
		}
		sep := "?"
		if strings.Contains(q, "?") {
			sep = "&"
		}
		st, got := getBody(t, a.URL+q+sep+"staleStores=true")
		var g, w map[string]json.RawMessage
		if err := json.Unmarshal([]byte(got), &g); st != http.StatusOK || err != nil {
			t.Fatalf("GET %s stale at a: %d %s", q, st, got)
		}
		if err := json.Unmarshal([]byte(want), &w); err != nil {
			t.Fatal(err)
		}
		if string(g["lags"]) != lags {
			t.Errorf("GET %s stale at a: lags %s, want %s", q, g["lags"], lags)
		}
		delete(g, "lags")
		if gb, wb := fmt.Sprint(g), fmt.Sprint(w); gb != wb {
			t.Errorf("GET %s stale at a:\n%s\nwant (alone)\n%s", q, got, want)
		}
		if st, body := getBody(t, a.URL+q); st != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"not_available"`) ||
			!strings.Contains(body, "runs partition 3 of store counts") {
			t.Errorf("GET %s without staleStores: %d %s, want 503 not_available", q, st, body)
		}
	}
	// An agent named for partition 3 that does not answer fails the read, copy or not.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	hostDead := strings.TrimPrefix(dead.URL, "http://")
	fa.agent.placement.Store(NewPlacementWithStandbys(hostA,
		map[string]map[string][]int32{hostA: {"counts": {0, 2}}, hostB: {"counts": {1}}, hostDead: {"counts": {3}}}, standbys))
	if st, body := getBody(t, a.URL+"/v1/stores/counts/count?staleStores=true"); st != http.StatusServiceUnavailable ||
		!strings.Contains(body, "partitions [3] of store counts are not available: the agent at "+hostDead) {
		t.Errorf("count with partition 3's agent down: %d %s", st, body)
	}
}

// With staleStores, a read by key whose partition no agent runs now (its agent died and
// the group has not moved its task yet) is redirected to an agent keeping a standby copy
// of it, which answers it with the copy's lag; without staleStores, or with no copy
// elsewhere, it still fails with 503 not_available.
func TestSpreadStaleKeyReadsOfAPartitionNoAgentRunsGoToAStandby(t *testing.T) {
	a, b, _, fa, fb := fanPair(t, testOptions, nil)
	hostA, _, hosts, _ := partitionThreesAgentDied(a, b, fa, fb)
	key := fanKeys()[3][0]
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(a.URL + "/v1/stores/counts/keys/" + key + "?staleStores=true")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := b.URL + "/v1/stores/counts/keys/" + key + "?staleStores=true"; resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != want {
		t.Fatalf("stale read of %s at a: %d Location %q, want 307 to %s", key, resp.StatusCode, resp.Header.Get("Location"), want)
	}
	st, body := getBody(t, a.URL+"/v1/stores/counts/keys/"+key+"?staleStores=true")
	if want := `"lags":{"3":{"currentOffsetPosition":3,"endOffsetPosition":10,"offsetLag":7}}`; st != http.StatusOK ||
		!strings.Contains(body, `"value":"`+key+` in 3"`) || !strings.Contains(body, want) {
		t.Errorf("stale read of %s followed: %d %s, want its value from b's copy and %s", key, st, body, want)
	}
	if st, body := getBody(t, a.URL+"/v1/stores/counts/keys/"+key); st != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"not_available"`) {
		t.Errorf("read of %s without staleStores: %d %s, want 503 not_available", key, st, body)
	}
	fa.agent.placement.Store(NewPlacement(hostA, hosts))
	if st, body := getBody(t, a.URL+"/v1/stores/counts/keys/"+key+"?staleStores=true"); st != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"not_available"`) {
		t.Errorf("stale read of %s with no copy anywhere: %d %s, want 503 not_available", key, st, body)
	}
}

// partitionThreesAgentDied sets fanPair's agents as after partition 3's agent died: a runs 0
// and 2, b runs 1 and keeps a standby copy of 3 (its DB holds partition 3), with a lag of 7.
// It returns the agents' application.server and the standby copies.
func partitionThreesAgentDied(a, b *httptest.Server, fa, fb *fixture) (hostA, hostB string, hosts, standbys map[string]map[string][]int32) {
	hostA, hostB = strings.TrimPrefix(a.URL, "http://"), strings.TrimPrefix(b.URL, "http://")
	fb.agent.local.Store(&map[int32]bool{1: true})
	fb.agent.copies.Store(&map[int32]LagInfo{3: {CurrentOffsetPosition: 3, EndOffsetPosition: 10, OffsetLag: 7}})
	hosts = map[string]map[string][]int32{hostA: {"counts": {0, 2}}, hostB: {"counts": {1}}}
	standbys = map[string]map[string][]int32{hostB: {"counts": {3}}}
	fa.agent.placement.Store(NewPlacementWithStandbys(hostA, hosts, standbys))
	fb.agent.placement.Store(NewPlacementWithStandbys(hostB, hosts, standbys))
	return hostA, hostB, hosts, standbys
}
