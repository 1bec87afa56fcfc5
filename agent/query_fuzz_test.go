package agent

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stoatflow/stoatflow/agent/internal/webtest"
)

// FuzzQueryRequest sends arbitrary /v1/stores paths and query strings, and arbitrary
// POST /v2/query bodies, to an agent serving one store of each kind. Whatever the request,
// the answer is a JSON document with a success or a 400-class status: bad input is the
// client's error, never a panic or a 500.
func FuzzQueryRequest(f *testing.F) {
	for _, s := range []struct {
		target string
		body   []byte
	}{
		{"hdr/keys/a", []byte(`{"store":"hdr","query":{"type":"KeyQuery","key":"a"}}`)},
		{"hdr/keys?from=a&to=z&limit=1&reverse=true", []byte(`{"store":"hdr","query":{"type":"RangeQuery","lower":"a","upper":"b","descending":true}}`)},
		{"wins/windows/a?from=0&to=100", []byte(`{"store":"wins","query":{"type":"WindowKeyQuery","key":"a","timeFrom":0,"timeTo":"1970-01-01T00:00:01Z"}}`)},
		{"vers/keys/5", []byte(`{"store":"vers","query":{"type":"VersionedKeyQuery","key":5,"asOf":150},"partitions":[0,1,7],"positionBound":{"wins":{"0":41}}}`)},
		{"raw/keys/AAE=", []byte(`{"store":"raw","query":{"type":"KeyQuery","key":"AAE="},"isolation":"READ_COMMITTED"}`)},
		{"sess/count?isolation=bogus", []byte(`{"store":"sess","query":{"type":"WindowRangeQuery","key":"a"},"requireActive":true}`)},
		{"lua/keys?prefix=%ff&after=x", []byte(`{"store":"lua","query":{"type":"KeyQuery","key":"x"}}`)},
		{"hdr/keys?limit=-1&unknown=1", []byte(`{"store":"hdr","query":{"type":"Nope"},"extra":1}`)},
		{"hdr/keys/", []byte(`{"store":"hdr","query":{"type":"KeyQuery","key":""}}`)},
		{"wins/windows/%2F?from=0&from=1", []byte(`{"store":"wins","query":{"type":"WindowKeyQuery","key":"/"}}`)},
		{"", []byte(`{"store":"wins","query":{"type":"WindowRangeQuery","fromTime":-9223372036854775808,"toTime":9223372036854775807}}`)},
	} {
		f.Add(s.target, s.body)
	}
	// One agent for every input: queries only read, and opening the stores for each input
	// would make the fuzzer test a few inputs a second instead of thousands.
	h := storesFixture(f).http.srv.Handler
	f.Fuzz(func(t *testing.T, target string, body []byte) {
		// A target that is not a URL never reaches the handlers: the server refuses it.
		if get, err := http.NewRequest(http.MethodGet, "http://localhost/v1/stores/"+target, nil); err == nil {
			checkQueryAnswer(t, h, get, target)
		}
		checkQueryAnswer(t, h, webtest.Request(http.MethodPost, "/v2/query", string(body)), string(body))
	})
}

// checkQueryAnswer serves r and checks the status class and that the answer is JSON.
func checkQueryAnswer(t *testing.T, h http.Handler, r *http.Request, input string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	code := rec.Code
	var first map[string]any
	// Ranges stream one JSON document per line; the first one is enough to check.
	dec := json.NewDecoder(rec.Body)
	decodeErr := dec.Decode(&first)
	redirect := code == http.StatusMovedPermanently || code == http.StatusTemporaryRedirect
	switch {
	case code >= 500 || code < 200 || (code >= 300 && code < 400 && !redirect):
		t.Fatalf("%s %s (input %q): status %d, answer %v", r.Method, r.URL, input, code, first)
	case (code == http.StatusNotFound || redirect) && rec.Header().Get("Content-Type") != "application/json":
		// The mux's own answers, before any endpoint: a plain-text 404 for a path none
		// matches, a redirect to the cleaned path for one with "." or "..".
	case decodeErr != nil:
		t.Fatalf("%s %s (input %q): status %d, answer is not JSON: %v", r.Method, r.URL, input, code, decodeErr)
	}
}
