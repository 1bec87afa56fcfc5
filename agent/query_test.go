package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/agent/internal/webtest"
	"github.com/stoatflow/stoatflow/pipeline"
)

// queryScript keeps, per key, a count in a timestamped store and the last value in a plain
// one.
const queryScript = `
local s = require("stoat")
local b = s.builder()
b:addStateStore{name = "counts", type = "timestampedKeyValue", valueSerde = "long"}
b:addStateStore{name = "last", type = "keyValue"}
b:stream("in"):process(function()
  local counts, last
  return {
    init = function(ctx) counts = ctx:getStateStore("counts"); last = ctx:getStateStore("last") end,
    process = function(ctx, k, v)
      counts:put(k, (counts:get(k) or 0) + 1)
      last:put(k, v)
    end,
  }
end, {stores = {"counts", "last"}})
return b
`

// call does one request and decodes the JSON answer (numbers kept exact).
func qcall(t *testing.T, method, url, body string) (int, map[string]any, []any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: content type %q, body %s", method, url, ct, raw)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s %s: %v in %s", method, url, err, raw)
	}
	obj, _ := v.(map[string]any)
	arr, _ := v.([]any)
	return resp.StatusCode, obj, arr
}

func qget(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	st, obj, _ := qcall(t, http.MethodGet, url, "")
	return st, obj
}

// waitFor polls url until ok holds for the answer.
func waitForAnswer(t *testing.T, url string, ok func(int, map[string]any) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, obj := qget(t, url)
		if ok(st, obj) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: still %d %v", url, st, obj)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func wantQueryError(t *testing.T, url string, status int, code, msg string) {
	t.Helper()
	st, obj := qget(t, url)
	if st != status || obj["code"] != code || !strings.Contains(fmt.Sprint(obj["error"]), msg) {
		t.Fatalf("GET %s = %d %v, want %d %s containing %q", url, st, obj, status, code, msg)
	}
}

func startQueryAgent(t *testing.T, extra string) (*runningAgent, []string, string) {
	t.Helper()
	brokers := testBroker(t, 3, "in")
	ra := startAgent(t, testConfig(t, brokers, queryScript, extra))
	t.Cleanup(func() { _ = ra.stop(t) })
	addr, err := ra.a.HTTPAddr(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ra, brokers, "http://" + addr
}

func TestQueryKeyValueEndpoints(t *testing.T) {
	ra, brokers, base := startQueryAgent(t, "")
	clog := pipeline.ChangelogTopic(ra.a.cfg.ApplicationID, "counts")
	produceKeys(t, brokers, 3, 30, 10, 0, "x")
	// Every key counted three times and committed.
	waitForAnswer(t, base+"/v1/stores/counts/count?isolation=READ_COMMITTED", func(st int, o map[string]any) bool {
		return st == 200 && fmt.Sprint(o["count"]) == "10"
	})
	for k := 0; k < 10; k++ {
		waitForAnswer(t, fmt.Sprintf("%s/v1/stores/counts/keys/k%d?isolation=READ_COMMITTED", base, k), func(st int, o map[string]any) bool {
			return st == 200 && fmt.Sprint(o["value"]) == "3"
		})
	}

	_, _, stores := qcall(t, http.MethodGet, base+"/v1/stores", "")
	if got := fmt.Sprint(stores); got != "[map[approximateNumUncommittedBytes:0 keySerde:string name:counts partitions:3 type:timestampedKeyValue valueSerde:long] map[approximateNumUncommittedBytes:0 keySerde:string name:last partitions:3 type:keyValue valueSerde:string]]" {
		t.Fatalf("stores = %s", got)
	}

	t.Run("get", func(t *testing.T) {
		st, o := qget(t, base+"/v1/stores/counts/keys/k3")
		home := pipeline.DefaultPartition([]byte("k3"), 3)
		if st != 200 || o["key"] != "k3" || fmt.Sprint(o["value"]) != "3" || fmt.Sprint(o["partition"]) != fmt.Sprint(home) {
			t.Fatalf("get = %d %v, want partition %d", st, o, home)
		}
		if ts, _ := o["timestamp"].(json.Number).Int64(); ts <= 0 {
			t.Fatalf("timestamp %v", o["timestamp"])
		}
		if _, has := o["headers"]; has {
			t.Fatalf("headers on a store that keeps none: %v", o)
		}
		st, o = qget(t, base+"/v1/stores/last/keys/k3")
		if st != 200 || o["value"] != "x" || fmt.Sprint(o["timestamp"]) != "-1" {
			t.Fatalf("plain store get = %d %v", st, o)
		}
		wantQueryError(t, base+"/v1/stores/counts/keys/nope", 404, "key_not_found", `key "nope" is not in store counts`)
		wantQueryError(t, base+"/v1/stores/missing/keys/k1", 404, "unknown_store",
			"Cannot get state store missing because no such store is registered in the topology. Its stores: ")
		wantQueryError(t, base+"/v1/stores/count/keys/k1", 404, "unknown_store",
			`Cannot get state store count because no such store is registered in the topology. Did you mean "counts"? Its stores: `)
		wantQueryError(t, base+"/v1/stores/counts/keys/k1?isolation=SERIALIZABLE", 400, "bad_parameter", "isolation:")
		wantQueryError(t, base+"/v1/stores/counts/keys/k1?isolaton=READ_COMMITTED", 400, "bad_parameter", `unknown parameter "isolaton"`)
		wantQueryError(t, base+"/v1/stores/counts/windows/k1", 400, "wrong_store_type", "counts is a timestampedKeyValue store")
	})

	t.Run("range", func(t *testing.T) {
		r := base + "/v1/stores/counts/keys"
		for q, want := range map[string]string{
			"":                         "k0,k1,k2,k3,k4,k5,k6,k7,k8,k9",
			"?reverse=true":            "k9,k8,k7,k6,k5,k4,k3,k2,k1,k0",
			"?from=k2&to=k4":           "k2,k3,k4",
			"?from=k2&to=k4&reverse=1": "k4,k3,k2",
			"?from=k8":                 "k8,k9",
			"?to=k1":                   "k0,k1",
			"?prefix=k1":               "k1",
			"?prefix=z":                "",
			"?from=k5&to=k2":           "",
		} {
			st, o := qget(t, r+q)
			if st != 200 || webtest.ItemKeys(t, o) != want {
				t.Fatalf("range %q = %d %v, want %s", q, st, o, want)
			}
			if _, cut := o["next"]; cut {
				t.Fatalf("range %q has a next cursor: %v", q, o)
			}
		}
		// The merge really crosses partitions.
		_, o := qget(t, r)
		parts := map[string]bool{}
		for _, it := range o["items"].([]any) {
			parts[fmt.Sprint(it.(map[string]any)["partition"])] = true
		}
		if len(parts) < 2 {
			t.Fatalf("all keys in one partition: %v", o)
		}
		wantQueryError(t, r+"?limit=0", 400, "bad_parameter", "limit:")
		wantQueryError(t, r+"?limit=10001", 400, "bad_parameter", "limit:")
		wantQueryError(t, r+"?reverse=maybe", 400, "bad_parameter", "reverse:")
		wantQueryError(t, r+"?prefix=k&from=k1", 400, "bad_parameter", "prefix:")
		wantQueryError(t, r+"?prefix=k&reverse=true", 400, "bad_parameter", "ascending")
		wantQueryError(t, base+"/v1/stores/last/keys?from=k1&limt=3", 400, "bad_parameter", `unknown parameter "limt"`)
	})

	t.Run("pagination", func(t *testing.T) {
		for _, reverse := range []bool{false, true} {
			var pages []string
			after := ""
			for range 5 {
				u := fmt.Sprintf("%s/v1/stores/last/keys?limit=4&reverse=%t", base, reverse)
				if after != "" {
					u += "&after=" + url.QueryEscape(after)
				}
				st, o := qget(t, u)
				if st != 200 {
					t.Fatalf("GET %s = %d %v", u, st, o)
				}
				pages = append(pages, webtest.ItemKeys(t, o))
				next, cut := o["next"]
				if !cut {
					break
				}
				after = next.(string)
			}
			want := "k0,k1,k2,k3|k4,k5,k6,k7|k8,k9"
			if reverse {
				want = "k9,k8,k7,k6|k5,k4,k3,k2|k1,k0"
			}
			if got := strings.Join(pages, "|"); got != want {
				t.Fatalf("pages (reverse %t) = %s, want %s", reverse, got, want)
			}
		}
	})

	t.Run("count", func(t *testing.T) {
		st, o := qget(t, base+"/v1/stores/last/count")
		if st != 200 || fmt.Sprint(o["count"]) != "10" {
			t.Fatalf("count = %d %v", st, o)
		}
	})

	t.Run("metadata", func(t *testing.T) {
		for _, k := range []string{"k0", "k3", "k7"} {
			st, o := qget(t, base+"/v1/metadata/counts/"+k+"?header.tenant=a")
			if st != 200 || fmt.Sprint(o["partition"]) != fmt.Sprint(pipeline.DefaultPartition([]byte(k), 3)) || o["activeHost"] != strings.TrimPrefix(base, "http://") {
				t.Fatalf("metadata %s = %d %v", k, st, o)
			}
			// The partition the metadata names is the one the key was found in.
			_, g := qget(t, base+"/v1/stores/counts/keys/"+k)
			if fmt.Sprint(g["partition"]) != fmt.Sprint(o["partition"]) {
				t.Fatalf("metadata says %v, the key is in %v", o["partition"], g["partition"])
			}
		}
		wantQueryError(t, base+"/v1/metadata/missing/k1", 404, "unknown_store", "Cannot get state store missing")
		wantQueryError(t, base+"/v1/metadata/counts/k1?tenant=a", 400, "bad_parameter", "tenant: unknown parameter")
	})

	t.Run("iqv2", func(t *testing.T) {
		home := pipeline.DefaultPartition([]byte("k3"), 3)
		res := queryV2(t, base, `{"store":"counts","query":{"type":"KeyQuery","key":"k3"}}`)
		if len(res) != 3 {
			t.Fatalf("results for %d partitions, want 3: %v", len(res), res)
		}
		for _, r := range res {
			want := "<nil>"
			if fmt.Sprint(r["partition"]) == fmt.Sprint(home) {
				want = "3"
			}
			if r["success"] != true || fmt.Sprint(r["result"]) != want {
				t.Fatalf("KeyQuery partition %v: %v, want result %s", r["partition"], r, want)
			}
			pos := r["position"].(map[string]any)
			if len(pos) != 1 || pos[clog] == nil {
				t.Fatalf("position %v", pos)
			}
		}
		one := fmt.Sprintf(`"partitions":[%d]`, home)
		r := queryV2(t, base, `{"store":"counts","query":{"type":"TimestampedKeyQuery","key":"k3"},`+one+`}`)[0]
		val := r["result"].(map[string]any)
		if fmt.Sprint(val["value"]) != "3" || val["timestamp"] == nil {
			t.Fatalf("TimestampedKeyQuery = %v", r)
		}
		var keys []string
		for _, r := range queryV2(t, base, `{"store":"counts","query":{"type":"TimestampedRangeQuery","lower":"k2","upper":"k5","descending":true}}`) {
			for _, it := range r["result"].([]any) {
				m := it.(map[string]any)
				if fmt.Sprint(m["value"]) != "3" || m["timestamp"] == nil {
					t.Fatalf("range item %v", m)
				}
				keys = append(keys, fmt.Sprint(m["key"]))
			}
		}
		if len(keys) != 4 {
			t.Fatalf("range keys %v", keys)
		}

		for body, want := range map[string]string{
			`{"store":"last","query":{"type":"TimestampedKeyQuery","key":"k3"}}`:                                                                       "UNKNOWN_QUERY_TYPE This store (keyValue store last) doesn't know how to execute the given query (TimestampedKeyQuery). Contact the store maintainer if you need support for a new query type.",
			`{"store":"counts","query":{"type":"TimestampedKeyWithHeadersQuery","key":"k3"}}`:                                                          "UNKNOWN_QUERY_TYPE This store (timestampedKeyValue store counts)",
			`{"store":"counts","query":{"type":"WindowKeyQuery","key":"k3","timeFrom":0,"timeTo":5}}`:                                                  "UNKNOWN_QUERY_TYPE",
			`{"store":"counts","query":{"type":"KeyQuery","key":"k3"},"partitions":[7]}`:                                                               "NOT_PRESENT The requested partition was not present at the time of the query.",
			`{"store":"counts","query":{"type":"KeyQuery","key":"k3"},` + one + `,"positionBound":{"` + clog + fmt.Sprintf(`":{"%d":1000000}}}`, home): fmt.Sprintf("NOT_UP_TO_BOUND For store partition %d, the current position Position{position={", home),
		} {
			r := queryV2(t, base, body)[0]
			if got := fmt.Sprint(r["failureReason"], " ", r["failureMessage"]); r["success"] != false || !strings.HasPrefix(got, want) {
				t.Fatalf("%s:\n got %s\nwant %s", body, got, want)
			}
		}
		// A bound the store has reached is no obstacle.
		r = queryV2(t, base, `{"store":"counts","query":{"type":"KeyQuery","key":"k3"},`+one+`,"positionBound":{"`+clog+fmt.Sprintf(`":{"%d":0}}}`, home))[0]
		if r["success"] != true {
			t.Fatalf("bound 0: %v", r)
		}

		for body, want := range map[string]string{
			`{"store":"missing","query":{"type":"KeyQuery","key":"k3"}}`:                   "404 unknown_store",
			`{"store":"counts","query":{"type":"GetQuery","key":"k3"}}`:                    "400 bad_parameter",
			`{"store":"counts","query":{"type":"KeyQuery"}}`:                               "400 bad_parameter",
			`{"store":"counts","query":{"type":"KeyQuery","key":"k3"},"x":1}`:              "400 bad_parameter",
			`{"store":"counts","query":{"type":"KeyQuery","key":"k3"},"isolation":"NONE"}`: "400 bad_parameter",
		} {
			st, o, _ := qcall(t, http.MethodPost, base+"/v2/query", body)
			if got := fmt.Sprint(st, " ", o["code"]); got != want {
				t.Fatalf("%s = %s %v, want %s", body, got, o, want)
			}
		}
	})
}

func queryV2(t *testing.T, base, body string) []map[string]any {
	t.Helper()
	st, o, _ := qcall(t, http.MethodPost, base+"/v2/query", body)
	if st != 200 {
		t.Fatalf("POST /v2/query %s = %d %v", body, st, o)
	}
	var out []map[string]any
	for _, r := range o["partitionResults"].([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

func TestQueryIsolationLevels(t *testing.T) {
	_, brokers, base := startQueryAgent(t, "processing.guarantee = \"exactly_once_v2\"\ncommit.interval.ms = 600000\ndefault.interactive.query.isolation.level = \"READ_COMMITTED\"\n")
	produceKeys(t, brokers, 3, 1, 1, 0, "open")
	waitForAnswer(t, base+"/v1/stores/last/keys/k0?isolation=READ_UNCOMMITTED", func(st int, o map[string]any) bool {
		return st == 200 && o["value"] == "open"
	})
	// The epoch is still open: committed reads, the configured default, do not see it.
	wantQueryError(t, base+"/v1/stores/last/keys/k0", 404, "key_not_found", "READ_COMMITTED")
	if _, o := qget(t, base+"/v1/stores/last/keys"); webtest.ItemKeys(t, o) != "" {
		t.Fatalf("committed range sees %v", o)
	}
	if _, o := qget(t, base+"/v1/stores/last/keys?isolation=READ_UNCOMMITTED"); webtest.ItemKeys(t, o) != "k0" {
		t.Fatalf("uncommitted range sees %v", o)
	}
	if _, o := qget(t, base+"/v1/stores/last/count"); fmt.Sprint(o["count"]) != "0" {
		t.Fatalf("committed count %v", o)
	}
	q := `{"store":"counts","query":{"type":"KeyQuery","key":"k0"},"partitions":[%d],"isolation":%q}`
	home := pipeline.DefaultPartition([]byte("k0"), 3)
	if r := queryV2(t, base, fmt.Sprintf(q, home, "READ_UNCOMMITTED"))[0]; fmt.Sprint(r["result"]) != "1" {
		t.Fatalf("IQv2 READ_UNCOMMITTED %v", r)
	}
	if r := queryV2(t, base, fmt.Sprintf(q, home, "READ_COMMITTED"))[0]; r["success"] != true || r["result"] != nil {
		t.Fatalf("IQv2 READ_COMMITTED %v", r)
	}
}
