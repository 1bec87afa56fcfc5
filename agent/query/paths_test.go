package query

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
)

// pathsFixture serves the string-keyed key-value store counts, holding the keys "", "/"
// and "a" in their partitions of five (three different ones), and the window store clicks, holding one window
// of the key "".
func pathsFixture(t *testing.T) *fixture {
	t.Helper()
	f, db := fixtureWithDB(t)
	str := serdes.String{}
	counts := pipeline.StoreSpec{Name: "counts", Type: pipeline.KeyValueStoreType, Serdes: pipeline.Serdes{Key: str, Value: str}}
	clicks := pipeline.StoreSpec{Name: "clicks", Type: pipeline.WindowStoreType, Serdes: pipeline.Serdes{Key: str, Value: str},
		WindowSize: 60_000, Retention: 1 << 40}
	for k, v := range map[string]string{"": "empty", "/": "slash", "a": "A"} {
		kv, err := db.KeyValueStore(counts, pipeline.DefaultPartition([]byte(k), 5))
		if err != nil {
			t.Fatal(err)
		}
		if err := kv.Put([]byte(k), []byte(v), 0); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := db.WindowStore(clicks, pipeline.DefaultPartition([]byte{}, 5))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Put([]byte{}, 60_000, []byte("w"), 60_000); err != nil {
		t.Fatal(err)
	}
	if err := db.Commit(nil); err != nil {
		t.Fatal(err)
	}
	f.serveRunning(db, []pipeline.StoreSpec{counts, clicks}, 5)
	return f
}

// TestTheEmptyKeyIsReadable: a key route ending in a slash reads the empty key (a string
// serde's ""), and one ending in %2F the key "/", which the mux takes for the same trailing
// slash; the routes without the slash still read a range and list the agents.
func TestTheEmptyKeyIsReadable(t *testing.T) {
	f := pathsFixture(t)
	for target, want := range map[string]string{
		"/v1/stores/counts/keys/":                           `map[key: partition:%d(empty) timestamp:-1 value:empty]`,
		"/v1/stores/counts/keys/?isolation=READ_COMMITTED":  `map[key: partition:%d(empty) timestamp:-1 value:empty]`,
		"/v1/stores/counts/keys/%2F":                        `map[key:/ partition:%d(slash) timestamp:-1 value:slash]`,
		"/v1/stores/counts/keys/a":                          `map[key:a partition:%d(a) timestamp:-1 value:A]`,
		"/v1/stores/clicks/windows/":                        `map[items:[map[key: value:w windowEnd:120000 windowStart:60000]]]`,
		"/v1/stores/clicks/windows/%2F":                     `map[items:[]]`,
		"/v1/stores/clicks/windows/?from=0&to=60000":        `map[items:[map[key: value:w windowEnd:120000 windowStart:60000]]]`,
		"/v1/metadata/counts/":                              `map[activeHost:localhost:9464 partition:%d(empty) standbyHosts:[]]`,
		"/v1/metadata/counts/%2F":                           `map[activeHost:localhost:9464 partition:%d(slash) standbyHosts:[]]`,
		"/v1/metadata/counts/?isolation=READ_UNCOMMITTED":   `map[activeHost:localhost:9464 partition:%d(empty) standbyHosts:[]]`,
		"/v1/stores/counts/keys":                            `map[items:[map[key: partition:%d(empty) timestamp:-1 value:empty] map[key:/ partition:%d(slash) timestamp:-1 value:slash] map[key:a partition:%d(a) timestamp:-1 value:A]]]`,
		"/v1/metadata/counts":                               `map[list:[map[hostInfo:localhost:9464 ...`,
		"/v1/stores/counts/keys/?nope=1":                    `400 bad_parameter`,
		"/v1/stores/counts/keys/?isolation=1&isolation=2":   `400 bad_parameter`,
		"/v1/metadata/counts/?header.h=1&isolation=NOTHING": `400 bad_parameter`,
	} {
		for k, name := range map[string]string{"": "empty", "/": "slash", "a": "a"} {
			want = strings.ReplaceAll(want, "%d("+name+")", fmt.Sprint(pipeline.DefaultPartition([]byte(k), 5)))
		}
		st, o := f.serve(t, "GET", target, "")
		got := fmt.Sprint(o)
		if strings.HasPrefix(want, "400 ") {
			if st != http.StatusBadRequest || o["code"] != strings.TrimPrefix(want, "400 ") {
				t.Errorf("GET %s: %d %s, want %s", target, st, got, want)
			}
			continue
		}
		if prefix, ok := strings.CutSuffix(want, "..."); ok {
			if st != http.StatusOK || !strings.HasPrefix(got, prefix) {
				t.Errorf("GET %s: %d %s, want 200 %s", target, st, got, want)
			}
			continue
		}
		if st != http.StatusOK || got != want {
			t.Errorf("GET %s: %d %s, want 200 %s", target, st, got, want)
		}
	}
}

// TestARepeatedParameterIsRefused: a parameter given twice on a store or metadata endpoint
// is refused, naming it, whatever the values (which one counts would be a guess); headers
// of key metadata may repeat, as in a record.
func TestARepeatedParameterIsRefused(t *testing.T) {
	f := pathsFixture(t)
	for target, param := range map[string]string{
		"/v1/stores/counts/keys?limit=1&limit=1000":                                          "limit",
		"/v1/stores/counts/keys?limit=&limit=5":                                              "limit",
		"/v1/stores/counts/keys?from=a&from=b":                                               "from",
		"/v1/stores/counts/keys/a?staleStores=true&staleStores=false":                        "staleStores",
		"/v1/stores/counts/keys/?staleStores=true&staleStores=true":                          "staleStores",
		"/v1/stores/counts/count?isolation=READ_COMMITTED&isolation=READ_COMMITTED":          "isolation",
		"/v1/stores/counts/count?partitions=0&partitions=1":                                  "partitions",
		"/v1/stores/clicks/windows/a?from=0&to=1&from=1":                                     "from",
		"/v1/stores?isolation=READ_COMMITTED&isolation=READ_UNCOMMITTED":                     "isolation",
		"/v1/metadata?isolation=READ_COMMITTED&isolation=READ_COMMITTED":                     "isolation",
		"/v1/metadata/counts?isolation=READ_COMMITTED&isolation=READ_COMMITTED":              "isolation",
		"/v1/metadata/counts/a?isolation=READ_COMMITTED&header.h=1&isolation=READ_COMMITTED": "isolation",
	} {
		st, o := f.serve(t, "GET", target, "")
		msg, _ := o["error"].(string)
		if st != http.StatusBadRequest || o["code"] != "bad_parameter" || !strings.HasPrefix(msg, param+": given 2 times") {
			t.Errorf("GET %s: %d %v, want 400 bad_parameter naming %s given twice", target, st, o, param)
		}
	}
	if st, o := f.serve(t, "GET", "/v1/metadata/counts/a?header.h=1&header.h=2", ""); st != http.StatusOK {
		t.Errorf("key metadata with a repeated header: %d %v, want 200", st, o)
	}
}

// A query string with a pair that cannot be decoded is refused, not read without that pair
// (Go's URL.Query drops it: ?reverse=%zz would list forwards).
func TestAnUndecodableParameterIsRefused(t *testing.T) {
	f := pathsFixture(t)
	for _, target := range []string{
		"/v1/stores/counts/keys?reverse=%zz",
		"/v1/stores/counts/keys?limit=%zz&limit=5",
		"/v1/stores/counts/keys/a?staleStores=tr%ue",
		"/v1/stores/counts/count?isolation=READ_COMMITTED;partitions=0",
		"/v1/stores?isolation=%",
	} {
		st, o := f.serve(t, "GET", target, "")
		if msg, _ := o["error"].(string); st != http.StatusBadRequest || o["code"] != "bad_parameter" || !strings.HasPrefix(msg, "query string: ") {
			t.Errorf("GET %s: %d %v, want 400 bad_parameter about the query string", target, st, o)
		}
	}
}

// An error about a key quotes at most 256 bytes of it, never a partial character, and says
// how long it was: a key is as long as a URL may be.
func TestErrorsQuoteALongKeyCut(t *testing.T) {
	f := pathsFixture(t)
	long := strings.Repeat("é", 3000)
	st, o := f.serve(t, "GET", "/v1/stores/counts/keys/"+url.PathEscape(long), "")
	msg, _ := o["error"].(string)
	if want := `key "` + strings.Repeat("é", 128) + `"… (6000 bytes) is not in store counts`; st != http.StatusNotFound || !strings.HasPrefix(msg, want) {
		t.Errorf("long key not found: %d %.400s, want 404 starting %.300s", st, msg, want)
	}
	if got, want := quoted("a\xffb"), `"a\xffb"`; got != want {
		t.Errorf("quoted short = %s, want %s", got, want)
	}
}
