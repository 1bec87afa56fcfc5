package query

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
)

// Without stale stores a standby answers no store query (its state trails the active's)
// and points at the active; key metadata names the active's host, or says it cannot.
func TestStandbyPointsAtTheActive(t *testing.T) {
	f, db := fixtureWithDB(t)
	spec := pipeline.StoreSpec{Name: "counts", Type: pipeline.KeyValueStoreType}
	f.serveStores(db, []pipeline.StoreSpec{spec}, 1)
	standby := stateStandby
	f.agent.state.Store(&standby)
	f.agent.active.Store(&[2]string{"replica-0", "replica-0.example:8080"})
	for _, req := range [][2]string{{"GET", "/v1/stores/counts/keys/aw=="}, {"GET", "/v1/stores/counts/keys"},
		{"GET", "/v1/stores/counts/count"}, {"POST", "/v2/query"}} {
		body := ""
		if req[0] == "POST" {
			body = `{"store": "counts", "query": {"type": "KeyQuery", "key": "aw=="}}`
		}
		st, o := f.serve(t, req[0], req[1], body)
		if st != http.StatusServiceUnavailable || o["code"] != "standby" || !strings.Contains(o["error"].(string), "replica-0.example:8080") {
			t.Fatalf("%s %s on a standby: %d %v, want 503 standby naming the active's host", req[0], req[1], st, o)
		}
	}
	if st, o := f.serve(t, "GET", "/v1/metadata/counts/aw==", ""); st != http.StatusOK || o["activeHost"] != "replica-0.example:8080" ||
		fmt.Sprint(o["standbyHosts"]) != "[]" {
		t.Fatalf("metadata on a standby: %d %v, want the active's host", st, o)
	}
	f.agent.active.Store(&[2]string{"replica-0", ""})
	if st, o := f.serve(t, "GET", "/v1/metadata/counts/aw==", ""); st != http.StatusServiceUnavailable || o["code"] != "not_available" {
		t.Fatalf("metadata on a standby whose active has no application.server: %d %v", st, o)
	}
}

// With stale stores allowed (Kafka Streams' enableStaleStores), a standby answers every
// store query from its copies and gives each partition's lag in the answer; a partition it
// keeps no copy of is still refused, saying why. Key metadata lists the standby hosts.
func TestStandbyAnswersStaleReadsWithItsLag(t *testing.T) {
	f, db := fixtureWithDB(t)
	str := serdes.String{}
	spec := pipeline.StoreSpec{Name: "counts", Type: pipeline.KeyValueStoreType, Serdes: pipeline.Serdes{Key: str, Value: str}}
	home := pipeline.DefaultPartition([]byte("k"), 2)
	kv, err := db.KeyValueStore(spec, home)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Put([]byte("k"), []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(nil); err != nil {
		t.Fatal(err)
	}
	f.serveStores(db, []pipeline.StoreSpec{spec}, 2)
	standby := stateStandby
	f.agent.state.Store(&standby)
	f.agent.active.Store(&[2]string{"replica-0", "replica-0.example:8080"})
	f.agent.standbyHosts = []string{"replica-1.example:8080"}
	lags := map[int32]LagInfo{0: {CurrentOffsetPosition: 7, EndOffsetPosition: 10, OffsetLag: 3}, 1: {CurrentOffsetPosition: 4, EndOffsetPosition: 4}}
	f.agent.copies.Store(&lags)
	lagJSON := func(p int32) string {
		b, _ := json.Marshal(lags[p])
		return string(b)
	}
	all := fmt.Sprintf(`{"0":%s,"1":%s}`, lagJSON(0), lagJSON(1))
	for target, want := range map[string]string{
		"/v1/stores/counts/keys/k?staleStores=true":    fmt.Sprintf(`{"key":"k","lags":{"%d":%s},"partition":%d,"timestamp":-1,"value":"v"}`, home, lagJSON(home), home),
		"/v1/stores/counts/keys?staleStores=true":      `{"items":[{"key":"k","partition":` + fmt.Sprint(home) + `,"timestamp":-1,"value":"v"}],"lags":` + all + `}`,
		"/v1/stores/counts/count?staleStores=1":        `{"count":1,"lags":` + all + `}`,
		"/v1/metadata/counts/k":                        fmt.Sprintf(`{"activeHost":"replica-0.example:8080","partition":%d,"standbyHosts":["replica-1.example:8080"]}`, home),
		"/v1/stores/counts/keys/k?staleStores=false":   "",
		"/v1/stores/counts/keys/k?staleStores=maybe":   "",
		"/v1/stores/counts/windows/k?staleStores=true": "",
	} {
		st, o := f.serve(t, "GET", target, "")
		got, _ := json.Marshal(o)
		switch {
		case strings.Contains(target, "false"):
			if st != http.StatusServiceUnavailable || o["code"] != "standby" || !strings.Contains(o["error"].(string), "staleStores=true") {
				t.Fatalf("GET %s = %d %s, want 503 standby suggesting staleStores=true", target, st, got)
			}
		case strings.Contains(target, "maybe"):
			if st != http.StatusBadRequest || o["code"] != "bad_parameter" {
				t.Fatalf("GET %s = %d %s, want 400 bad_parameter", target, st, got)
			}
		case strings.Contains(target, "windows"):
			if st != http.StatusBadRequest || o["code"] != "wrong_store_type" {
				t.Fatalf("GET %s = %d %s, want 400 wrong_store_type", target, st, got)
			}
		case st != http.StatusOK || string(got) != want:
			t.Fatalf("GET %s = %d %s\nwant %s", target, st, got, want)
		}
	}

	// IQv2: staleStores in the body; each standby partition's result carries its lag. With
	// requireActive a standby copy does not answer.
	st, o := f.serve(t, "POST", "/v2/query", `{"store":"counts","query":{"type":"KeyQuery","key":"k"},"staleStores":true}`)
	results, _ := o["partitionResults"].([]any)
	if st != http.StatusOK || len(results) != 2 {
		t.Fatalf("IQv2 stale: %d %v", st, o)
	}
	for _, r := range results {
		r := r.(map[string]any)
		n, _ := r["partition"].(json.Number).Int64()
		p := int32(n)
		lag, _ := json.Marshal(r["lag"])
		if r["success"] != true || string(lag) != lagJSON(p) || (p == home) != (r["result"] == "v") {
			t.Fatalf("IQv2 stale, partition %d: %v", p, r)
		}
	}
	st, o = f.serve(t, "POST", "/v2/query", `{"store":"counts","query":{"type":"KeyQuery","key":"k"},"staleStores":true,"requireActive":true}`)
	for _, r := range o["partitionResults"].([]any) {
		if r := r.(map[string]any); st != http.StatusOK || r["success"] != false || r["failureReason"] != failNotActive {
			t.Fatalf("IQv2 stale with requireActive: %d %v", st, o)
		}
	}
	if st, o := f.serve(t, "POST", "/v2/query", `{"store":"counts","query":{"type":"KeyQuery","key":"k"}}`); st != http.StatusServiceUnavailable || o["code"] != "standby" {
		t.Fatalf("IQv2 without staleStores on a standby: %d %v", st, o)
	}

	// A cold standby keeps no copy to read stale: it still refuses, saying why.
	f.agent.copies.Store(nil)
	if st, o := f.serve(t, "GET", "/v1/stores/counts/keys/k?staleStores=true", ""); st != http.StatusServiceUnavailable || o["code"] != "standby" ||
		!strings.Contains(o["error"].(string), "keeps no copy of partition") || !strings.Contains(o["error"].(string), "a cold standby") {
		t.Fatalf("stale read of a cold standby: %d %v", st, o)
	}
}
