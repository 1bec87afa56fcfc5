package console

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"error": msg, "code": code})
}

// testServer serves the console of a topology with the nodes given; taps get is the hook
// of the processing goroutine, which the test plays.
func testServer(t *testing.T, taps *Taps, nodes ...string) (*Server, *httptest.Server) {
	t.Helper()
	s := NewServer(Sources{
		Metrics: metrics.New(), State: func() string { return "RUNNING" }, Nodes: func() []string { return nodes },
		Time: func() *TimeStatus { return nil }, StoreSizes: func() map[string]int64 { return nil },
		Restore: &RestoreProgress{}, Log: NewRecentLog(slog.DiscardHandler, 5), Taps: taps,
		WriteJSON: writeJSON, WriteError: writeError,
	})
	mux := http.NewServeMux()
	s.Register(mux.Handle)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { s.Close(); srv.Close() })
	return s, srv
}

// The page's files carry a Content-Security-Policy that allows no inline code and no eval,
// and the page has none: its scripts are files of the agent.
func TestPageForbidsInlineCodeAndEval(t *testing.T) {
	_, srv := testServer(t, NewTaps(10, 1))
	for _, path := range []string{"/ui", "/ui/app.js", "/ui/app.css", "/ui/vendor/dagre.js"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != http.StatusOK || csp != ContentSecurityPolicy {
			t.Fatalf("GET %s: %s, CSP %q", path, resp.Status, csp)
		}
		if path == "/ui" && !bytes.Contains(body, []byte(`<script type="module" src="/ui/app.js">`)) {
			t.Fatalf("GET /ui is not the page:\n%s", body)
		}
		if strings.HasSuffix(path, ".js") && regexp.MustCompile(`\beval\(|new Function\(|setTimeout\("`).Match(body) {
			t.Errorf("%s evaluates strings as code", path)
		}
	}
	for _, directive := range []string{"script-src 'self'", "style-src 'self'", "default-src 'none'", "connect-src 'self'"} {
		if !strings.Contains(ContentSecurityPolicy, directive) {
			t.Errorf("the policy lacks %q", directive)
		}
	}
	if strings.Contains(ContentSecurityPolicy, "unsafe") {
		t.Errorf("the policy allows unsafe code: %s", ContentSecurityPolicy)
	}
	page, _ := uiFiles.ReadFile("ui/index.html")
	if regexp.MustCompile(`<script(?: [^>]*)?>[^<]`).Match(page) || regexp.MustCompile(`(?i)\son[a-z]+=|style=`).Match(page) {
		t.Error("index.html has inline script, event handlers or style attributes")
	}
	for _, path := range []string{"/ui", "/ui/", "/ui/app.js"} {
		if !IsAsset(path) {
			t.Errorf("IsAsset(%q) = false", path)
		}
	}
	for _, path := range []string{"/v1/status", "/v1/tap/x", "/uix"} {
		if IsAsset(path) {
			t.Errorf("IsAsset(%q) = true", path)
		}
	}
}

// fakeTopology is the processing goroutine's side of the taps: the hooks Apply installs.
type fakeTopology struct {
	mu    sync.Mutex
	hooks map[string]pipeline.TapFunc
}

func (f *fakeTopology) SetTap(node string, fn pipeline.TapFunc) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fn == nil {
		delete(f.hooks, node)
	} else {
		f.hooks[node] = fn
	}
	return nil
}

// ValueSerde: the fake's nodes have no serde known, their values show as they are.
func (f *fakeTopology) ValueSerde(string) pipeline.Serde { return nil }

func (f *fakeTopology) hook(node string) pipeline.TapFunc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hooks[node]
}

// follow plays the processing goroutine: it applies the taps whenever they change.
func follow(t *testing.T, taps *Taps) *fakeTopology {
	topo := &fakeTopology{hooks: map[string]pipeline.TapFunc{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-taps.Changed():
				taps.Apply(topo)
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return topo
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A tap streams the node's records as server-sent events; with nobody watching, the node
// has no hook; the server's Close ends the stream.
func TestTapStreamsServerSentEvents(t *testing.T) {
	taps := NewTaps(1000, 2)
	topo := follow(t, taps)
	s, srv := testServer(t, taps, "src", "upper")

	resp, err := http.Get(srv.URL + "/v1/tap/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("tap of an unknown node: %s", resp.Status)
	}
	if topo.hook("upper") != nil {
		t.Fatal("a hook while nobody taps")
	}
	resp, err = http.Get(srv.URL + "/v1/tap/upper")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("tap: %s, %s", resp.Status, ct)
	}
	waitFor(t, "the hook", func() bool { return topo.hook("upper") != nil })
	if topo.hook("src") != nil {
		t.Fatal("a hook on a node nobody taps")
	}
	topo.hook("upper")(pipeline.Record{Key: "k", Value: pipeline.Windowed{Key: []byte{0xff}, Start: 10, End: 20}, Timestamp: 7,
		Headers: pipeline.Headers{{Key: "trace", Value: []byte("t-1")}, {Key: "bin", Value: []byte{0xff}}}, Topic: "in", Partition: 2, Offset: 9})
	r := bufio.NewReader(resp.Body)
	var event, data string
	for data == "" {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event: "))
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimSpace(strings.TrimPrefix(line, "data: "))
		}
	}
	want := `{"node":"upper","timestamp":7,"key":"k","value":{"key":"/w==","window":{"end":20,"start":10}},` +
		`"headers":[{"key":"trace","value":"t-1"},{"key":"bin","base64":"/w=="}],"topic":"in","partition":2,"offset":9,"skipped":0}`
	if event != "record" || data != want {
		t.Fatalf("event %q data\n%s\nwant\n%s", event, data, want)
	}
	s.Close()
	if _, err := io.ReadAll(r); err != nil {
		t.Fatalf("the stream did not end cleanly at Close: %v", err)
	}
	waitFor(t, "the hook removed", func() bool { return topo.hook("upper") == nil })
}

// A tap outlives the server's read and write timeouts, which end ordinary requests.
func TestTapOutlivesTheServerTimeouts(t *testing.T) {
	taps := NewTaps(1000, 1)
	topo := follow(t, taps)
	s := NewServer(Sources{
		Metrics: metrics.New(), State: func() string { return "RUNNING" }, Nodes: func() []string { return []string{"n"} },
		Time: func() *TimeStatus { return nil }, StoreSizes: func() map[string]int64 { return nil },
		Restore: &RestoreProgress{}, Log: NewRecentLog(slog.DiscardHandler, 5), Taps: taps,
		WriteJSON: writeJSON, WriteError: writeError,
	})
	mux := http.NewServeMux()
	s.Register(mux.Handle)
	srv := httptest.NewUnstartedServer(mux)
	const timeout = 100 * time.Millisecond
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = timeout, timeout
	srv.Start()
	t.Cleanup(func() { s.Close(); srv.Close() })
	resp, err := http.Get(srv.URL + "/v1/tap/n")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	waitFor(t, "the hook", func() bool { return topo.hook("n") != nil })
	// Past both timeouts on purpose: the stream must still carry records.
	time.Sleep(4 * timeout)
	topo.hook("n")(pipeline.Record{Key: "late", Value: "still here"})
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"still here"`) {
			return
		}
	}
	t.Fatalf("the stream ended before the record: %v", sc.Err())
}

// tapEvents reads the events waiting in sub without blocking: the records shown and the
// records they and the "skipped" events count as skipped.
func tapEvents(t *testing.T, sub *Subscription) (shown, skipped int64) {
	t.Helper()
	for {
		select {
		case m := <-sub.Events:
			var ev TapEvent
			if err := json.Unmarshal(m.Data, &ev); err != nil {
				t.Fatal(err)
			}
			if m.Event == "record" {
				shown++
			}
			skipped += ev.Skipped
		default:
			return shown, skipped
		}
	}
}

// However fast a node emits, a tap shows at most its rate; every other record is counted as
// skipped, by the next record shown or, once the node is quiet, by an event of its own.
func TestTapSamplesAtMostItsRate(t *testing.T) {
	const rate = 50
	taps := NewTaps(rate, 1)
	topo := follow(t, taps)
	sub, err := taps.Subscribe("n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := taps.Subscribe("n"); err != ErrTooManyTaps {
		t.Fatalf("a second tap over max clients: %v", err)
	}
	waitFor(t, "the hook", func() bool { return topo.hook("n") != nil })
	hook := topo.hook("n")
	// The bucket refills by the taps' own coarse clock (a tick every 10 ms), which a loaded
	// machine can leave behind the wall clock: the bound is the time that clock saw pass.
	// The events are read after every 40 records, fewer than the watcher's buffer holds
	// (rate), so that none is lost however slowly the loop runs.
	start := taps.now.Load()
	const records, chunk = 200_000, 40
	shown, skipped := int64(0), int64(0)
	for i := 0; i < records; i += chunk {
		for range chunk {
			hook(pipeline.Record{Key: "k", Value: int64(1)})
		}
		sh, sk := tapEvents(t, sub)
		shown, skipped = shown+sh, skipped+sk
	}
	elapsed := time.Duration(taps.now.Load() - start)
	if most := int64(rate/10) + int64(elapsed.Seconds()*rate) + 1; shown < 1 || shown > most {
		t.Fatalf("%d records shown in %v at %d/s (at most %d)", shown, elapsed, rate, most)
	}
	waitFor(t, "every record shown or counted as skipped", func() bool {
		_, sk := tapEvents(t, sub)
		skipped += sk
		return shown+skipped >= records
	})
	if shown+skipped != records || sub.Lost() != 0 {
		t.Fatalf("shown %d + skipped %d, of %d (%d lost)", shown, skipped, records, sub.Lost())
	}
	taps.Unsubscribe(sub)
	if _, err := taps.Subscribe("n"); err != nil {
		t.Fatalf("a tap after the last one left: %v", err)
	}
}

// A node that goes quiet right after records the sampling skipped still tells its watchers
// how many: once no record was shown for a second, in an event "skipped".
func TestTapReportsTheRecordsSkippedBeforeANodeWentQuiet(t *testing.T) {
	taps := NewTaps(10, 1) // a burst of one record, a token every 100 ms
	topo := follow(t, taps)
	sub, err := taps.Subscribe("n")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the hook", func() bool { return topo.hook("n") != nil })
	hook := topo.hook("n")
	// Emit until a record is not shown (the second, unless the clock refilled a token),
	// then nothing more.
	sent, shown := int64(0), int64(0)
	for shown == sent {
		hook(pipeline.Record{Key: "k", Value: sent, Offset: sent})
		sent++
		sh, _ := tapEvents(t, sub)
		shown += sh
	}
	select {
	case m := <-sub.Events:
		var ev TapSkipped
		if err := json.Unmarshal(m.Data, &ev); err != nil {
			t.Fatal(err)
		}
		if m.Event != "skipped" || ev != (TapSkipped{Node: "n", Skipped: sent - shown}) {
			t.Fatalf("after %d records, %d shown: event %s %s", sent, shown, m.Event, m.Data)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the %d records skipped were never reported", sent-shown)
	}
}

func TestRecentLogKeepsTheLastWarningsAndErrors(t *testing.T) {
	var out bytes.Buffer
	h := NewRecentLog(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelError}), 2)
	log := slog.New(h).With("app", "wc").WithGroup("g")
	log.Info("not kept")
	log.Warn("one", "n", 1)
	log.Error("two", "err", strings.Repeat("x", 5000))
	log.Warn("three", slog.Group("s", "k", "v"))
	got := h.Recent()
	if len(got) != 2 || got[0].Message != "two" || got[1].Message != "three" || got[0].Level != "ERROR" {
		t.Fatalf("kept %+v", got)
	}
	if got[1].Attrs["app"] != "wc" || got[1].Attrs["g.s.k"] != "v" || len(got[0].Attrs["g.err"]) > maxLogValue+4 {
		t.Fatalf("attrs %v / %d bytes", got[1].Attrs, len(got[0].Attrs["g.err"]))
	}
	if strings.Contains(out.String(), "one") || strings.Contains(out.String(), "three") || !strings.Contains(out.String(), "two") {
		t.Fatalf("the agent's own level still decides what is logged:\n%s", out.String())
	}
	if e := NewRecentLog(slog.DiscardHandler, 3).Recent(); e == nil || len(e) != 0 {
		t.Fatalf("no entries: %#v, want an empty list", e)
	}
}

func TestRestoreProgressIsLoggedAndShown(t *testing.T) {
	var mu sync.Mutex
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &out}, nil))
	var p RestoreProgress
	if p.Status() != nil {
		t.Fatal("a status before any restore")
	}
	end := p.Begin(1000, log, 5*time.Millisecond)
	p.At("counts", 2)
	p.Advance(240, 250)
	s := p.Status()
	if s == nil || s.Store != "counts" || s.Partition != 2 || s.Records != 240 || s.Offsets != 250 || s.TotalOffsets != 1000 || s.ETASeconds < 0 || s.RecordsPerSecond <= 0 {
		t.Fatalf("status %+v", s)
	}
	waitFor(t, "a progress line", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(out.String(), "restoring state stores") && strings.Contains(out.String(), "records=240") &&
			strings.Contains(out.String(), "offsets=250 of=1000") && strings.Contains(out.String(), "eta=")
	})
	end()
	if p.Status() != nil {
		t.Fatal("a status after the restore ended")
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// The cost of the tap on a busy node: a record through source → mapValues → sink with
// nobody tapping (the engine's nil check), and with one tap on the mapValues node, its
// sampling and a watcher reading what it shows.
func BenchmarkTap(b *testing.B) {
	for _, tapped := range []bool{false, true} {
		name := "nobody"
		if tapped {
			name = "one-tap"
		}
		b.Run(name, func(b *testing.B) {
			str, err := serdes.ByName("string")
			if err != nil {
				b.Fatal(err)
			}
			sb := pipeline.NewStreamsBuilder(pipeline.Serdes{Key: str, Value: str})
			s, _ := sb.Stream([]string{"in"}, pipeline.Consumed{})
			m, _ := s.MapValues(func(r pipeline.Record) (any, error) { return strings.ToUpper(r.Value.(string)), nil }, "upper")
			if err := m.To("out", pipeline.Produced{}); err != nil {
				b.Fatal(err)
			}
			topo, err := sb.Build(pipeline.TopologyOptions{Collector: discard{}, SourcePartitions: map[string]int32{"in": 1}})
			if err != nil {
				b.Fatal(err)
			}
			taps := NewTaps(100, 1)
			if tapped {
				sub, err := taps.Subscribe("upper")
				if err != nil {
					b.Fatal(err)
				}
				done := make(chan struct{})
				go func() {
					for {
						select {
						case <-sub.Events:
						case <-done:
							return
						}
					}
				}()
				defer func() { close(done); taps.Unsubscribe(sub) }()
			}
			taps.Apply(topo)
			in := pipeline.SourceRecord{Topic: "in", Key: []byte("k"), Value: []byte("a line of text"), Timestamp: 1}
			b.ReportAllocs()
			for b.Loop() {
				if err := topo.Process(&in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type discard struct{}

func (discard) Send(string, int32, []byte, []byte, pipeline.Headers, int64, *pipeline.SourceRecord) error {
	return nil
}
func (discard) PartitionsFor(string) (int32, error) { return 1, nil }
