package query

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingBody counts the bytes this agent read of another agent's answer.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

type countingTransport struct{ n *atomic.Int64 }

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Body = countingBody{resp.Body, t.n}
	}
	return resp, err
}

// endlessPeer answers every forwarded read with head, then body repeated (next gives the
// i-th piece) until 8 MiB are written or the connection is gone; written counts the bytes,
// and gone is closed once the connection was closed or the request ended.
func endlessPeer(head string, next func(i int) string, written *atomic.Int64, gone chan struct{}) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !r.URL.Query().Has(PartitionsParam) {
				h.ServeHTTP(w, r)
				return
			}
			defer close(gone)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			piece := head
			for i := 0; written.Load() < 8<<20; i++ {
				n, err := io.WriteString(w, piece)
				written.Add(int64(n))
				if err != nil {
					return
				}
				piece = next(i)
			}
			w.(http.Flusher).Flush()
			// A peer that has said 8 MiB and stops is one the read could wait for until the
			// query's deadline: the bound must have failed the read already.
			<-r.Context().Done()
		})
	}
}

// boundOptions read other agents' answers through a client counting the bytes, with a
// small producer.max.request.size so the bound of a range item is 16 × 8 + 64 KiB.
func boundOptions(read *atomic.Int64) Options {
	opts := testOptions
	opts.Timeout = 5 * time.Second
	opts.MaxRecordBytes = 16 << 10
	opts.Peers = &http.Client{Transport: countingTransport{read}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return opts
}

func waitGone(t *testing.T, gone chan struct{}) {
	t.Helper()
	select {
	case <-gone:
	case <-time.After(4 * time.Second):
		t.Error("the connection to the endless agent was not closed")
	}
}

// An agent answering a count without end fails the count with 503 not_available naming it
// once its answer passes the few KiB a count takes, and its connection is closed: the
// asking agent reads no more of it.
func TestFanOutBoundsAnEndlessCount(t *testing.T) {
	var read, written atomic.Int64
	gone := make(chan struct{})
	a, b, _, _, _ := fanPair(t, boundOptions(&read), endlessPeer(`{"count":1`, func(int) string { return strings.Repeat(" ", 4096) }, &written, gone))
	st, body := getBody(t, a.URL+"/v1/stores/counts/count")
	want := "partitions [1 3] of store counts are not available: the agent at " + strings.TrimPrefix(b.URL, "http://") +
		" that runs them answered a count over 4608 bytes"
	if st != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"not_available"`) || !strings.Contains(body, want) {
		t.Errorf("count with b answering without end: %d %s, want 503 %s", st, body, want)
	}
	if n := read.Load(); n > 4608 {
		t.Errorf("read %d bytes of b's count, more than its bound of 4608 (b wrote %d)", n, written.Load())
	} else {
		t.Logf("read %d bytes of b's count, b wrote %d", n, written.Load())
	}
	waitGone(t, gone)
}

// An agent answering a range item larger than any store entry fails the read with 503
// not_available naming it, before the answer starts, having read no more than the bound.
func TestFanOutBoundsAHugeRangeItem(t *testing.T) {
	var read, written atomic.Int64
	gone := make(chan struct{})
	a, b, _, _, _ := fanPair(t, boundOptions(&read), endlessPeer(`{"items":[{"key":"w","value":"`, func(int) string { return strings.Repeat("x", 4096) }, &written, gone))
	const bound = 8*(16<<10) + 64<<10
	st, body := getBody(t, a.URL+"/v1/stores/counts/keys")
	want := fmt.Sprintf("partitions [1 3] of store counts are not available: the agent at %s that runs them answered a range item over %d bytes",
		strings.TrimPrefix(b.URL, "http://"), bound)
	if st != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"not_available"`) || !strings.Contains(body, want) {
		t.Errorf("range with b answering a huge item: %d %s, want 503 %s", st, body, want)
	}
	// The start of the answer and the item each had the bound.
	if n := read.Load(); n > 2*bound {
		t.Errorf("read %d bytes of b's range, more than twice its bound of %d (b wrote %d)", n, bound, written.Load())
	} else {
		t.Logf("read %d bytes of b's range, b wrote %d", n, written.Load())
	}
	waitGone(t, gone)
}

// item is a range item as an agent asked for partitions writes it, with a comma.
func item(key string, p int32) string {
	return fmt.Sprintf(`{"key":%q,"value":"v","timestamp":0,"partition":%d,"rawKey":%q},`, key, p, base64.StdEncoding.EncodeToString([]byte(key)))
}

// An agent answering items without end, or repeating one, fails the read once past the
// items a page of its partitions holds (limit, and one per partition of the last key), or
// at the repeat: the page's items are followed by not_available naming it, never by more.
func TestFanOutBoundsAnEndlessRangeOfItems(t *testing.T) {
	for _, c := range []struct {
		name, query, want string
		next              func(i int) string
	}{
		// With staleStores the other agents' answers are read to their end, for their lags.
		{"endless", "/v1/stores/counts/keys?limit=50&staleStores=true", "answered more than the 51 items a page of its partitions holds",
			func(i int) string { return item(fmt.Sprintf("w%07d", i), 1) }},
		// Equal keys are never split across pages: a key repeated for ever would fill one.
		{"repeated", "/v1/stores/counts/keys?from=dup&limit=1", "answered items out of the range's order",
			func(int) string { return item("dup", 1) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var read, written atomic.Int64
			gone := make(chan struct{})
			a, b, _, _, _ := fanPair(t, boundOptions(&read), endlessPeer(`{"items":[`, c.next, &written, gone))
			st, body := getBody(t, a.URL+c.query)
			want := "partitions [1 3] of store counts are not available: the agent at " + strings.TrimPrefix(b.URL, "http://") +
				" that runs them " + c.want
			if st != http.StatusOK || !strings.Contains(body, `"code":"not_available"`) || !strings.Contains(body, want) || strings.Contains(body, `"next"`) {
				t.Errorf("GET %s with b answering without end: %d %s, want the page to end in %s", c.query, st, body, want)
			}
			if n := read.Load(); n > 64<<10 {
				t.Errorf("read %d bytes of b's range, more than 64 KiB (b wrote %d)", n, written.Load())
			} else {
				t.Logf("read %d bytes of b's range, b wrote %d", n, written.Load())
			}
			waitGone(t, gone)
		})
	}
}

// An agent answering an item of a partition it was not asked for fails the read, named:
// its items are not the partitions the merge counts on.
func TestFanOutRefusesAnItemOfAPartitionNotAsked(t *testing.T) {
	var read, written atomic.Int64
	gone := make(chan struct{})
	a, b, _, _, _ := fanPair(t, boundOptions(&read), endlessPeer(`{"items":[`, func(i int) string { return item(fmt.Sprintf("w%07d", i), 2) }, &written, gone))
	st, body := getBody(t, a.URL+"/v1/stores/counts/keys")
	want := "partitions [1 3] of store counts are not available: the agent at " + strings.TrimPrefix(b.URL, "http://") +
		" that runs them answered an item of partition 2, which it was not asked for"
	if st != http.StatusServiceUnavailable || !strings.Contains(body, `"code":"not_available"`) || !strings.Contains(body, want) {
		t.Errorf("range with b answering partition 2: %d %s, want 503 %s", st, body, want)
	}
	waitGone(t, gone)
}
