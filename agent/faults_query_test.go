//go:build !race

// The query flood measures a processing rate, which the race detector distorts (it slows
// the agent process several times over, and not evenly); make test runs it in its second
// pass, without -race.

package agent

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestFaultFloodOfQueriesKeepsProcessing floods an agent that has one CPU (GOMAXPROCS=1) with
// 500 clients sending range reads, counts, IQv2 ranges and gets back to back, ignoring
// Retry-After, and checks that it keeps at least half the processing rate it has
// unloaded (a quarter in make test, see below), with exactly-once output intact. Without a bound on queries, processing
// stopped, the transaction outlived transaction.timeout.ms and the agent exited.
func TestFaultFloodOfQueriesKeepsProcessing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an agent process under load; not in -short")
	}
	const parts, keys, backlog, clients, rounds = 3, 20000, 150000, 500, 5
	brokers := testBroker(t, parts, "in", "out")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.lua"), []byte(countScript), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	app := fmt.Sprintf("flood-%d", time.Now().UnixNano())
	path := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`
[agent]
scripts = ["p.lua"]
http.listen = %q
[streams]
application.id = %q
bootstrap.servers = %q
processing.guarantee = "exactly_once_v2"
state.dir = %q
`, addr, app, strings.Join(brokers, ","), filepath.Join(dir, "state"))), 0o644); err != nil {
		t.Fatal(err)
	}
	admin, err := sarama.NewClusterAdmin(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	committed := func() int64 {
		offs, err := admin.ListConsumerGroupOffsets(app, map[string][]int32{"in": {0, 1, 2}})
		if err != nil {
			return -1
		}
		var n int64
		for _, b := range offs.Blocks["in"] {
			if b.Offset > 0 {
				n += b.Offset
			}
		}
		return n
	}
	// await polls until n records are committed and returns when; the agent must not exit.
	await := func(exited <-chan error, n int64) time.Time {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			select {
			case err := <-exited:
				t.Fatalf("the agent exited while processing: %v", err)
			default:
			}
			if got := committed(); got >= n {
				return time.Now()
			} else if time.Now().After(deadline) {
				t.Fatalf("processing stalled: %d of %d records committed", got, n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// rate is the records per second committed between 10 % and 90 % of a backlog, away
	// from the start-up and the tail.
	rate := func(exited <-chan error, from int64) float64 {
		t.Helper()
		lo, hi := from+backlog/10, from+backlog*9/10
		tLo := await(exited, lo)
		return float64(hi-lo) / await(exited, hi).Sub(tLo).Seconds()
	}
	start := func() (*exec.Cmd, <-chan error) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "STOATFLOW_TEST_AGENT_CONFIG="+path, "GOMAXPROCS=1")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() }) // when a check failed
		return cmd, exited
	}
	stop := func(cmd *exec.Cmd, exited <-chan error) {
		t.Helper()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := <-exited; err != nil {
			t.Fatalf("agent exit: %v", err)
		}
	}

	// Rounds of one unloaded and one loaded run, each over a fresh backlog: the ratio of
	// each pair, their median, so that other load on the machine moves both sides.
	var ratios []float64
	var from int64
	measure := func(f *flood) float64 {
		produceKeys(t, brokers, parts, backlog, keys, int(from), "v")
		cmd, exited := start()
		r := rate(exited, from)
		if f != nil {
			// The flood ran through the measured span, but a fast agent, or clients the
			// machine starves, can finish the backlog before any query is answered (a
			// starting agent answers not_ready, then the gate too_many_queries): the flood
			// goes on until one is, while the agent processes the tail and after.
			pollFor(t, time.Minute, "no query answered during the flood", func() bool { return f.answered() > 0 })
			stats := f.stop()
			t.Logf("answers to the %d query clients by status: %v (and %d requests not connected)", clients, stats, f.errors.Load())
		}
		from += backlog
		await(exited, from)
		stop(cmd, exited)
		return r
	}
	for range rounds {
		unloaded := measure(nil)
		loaded := measure(startFlood(t, addr, clients))
		ratios = append(ratios, loaded/unloaded)
		t.Logf("processing on one CPU: %.0f records/s unloaded, %.0f records/s under %d query clients: %.0f %%",
			unloaded, loaded, clients, 100*loaded/unloaded)
	}
	slices.Sort(ratios)
	ratio := ratios[len(ratios)/2]
	t.Logf("median: processing kept %.0f %% of its unloaded rate under the query flood", 100*ratio)
	// make soak holds the bar, half the unloaded rate (66-80 % measured on an idle
	// machine). make test runs beside other work (a CI machine's other jobs, other packages'
	// tests), which starves the flood's clients and the agent unevenly: it asks a quarter,
	// still far from what the flood did before queries were bounded (processing stopped).
	least := 0.25
	if os.Getenv("STOATFLOW_SOAK_KILLS") != "" {
		least = 0.5
	}
	if ratio < least {
		t.Errorf("under the query flood processing kept %.0f %% of its unloaded rate, want at least %.0f %%", 100*ratio, 100*least)
	}
	want := map[string]int64{}
	for i := range int(from) {
		want[fmt.Sprintf("k%d", i%keys)]++
	}
	checkExactCounts(t, brokers, want)
}

// freeAddr is a loopback address with a port free a moment ago, for an agent process
// whose bound address the test cannot ask.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// flood is clients querying an agent back to back until stopped.
type flood struct {
	cancel context.CancelFunc
	tr     *http.Transport
	wg     sync.WaitGroup
	mu     sync.Mutex
	status map[int]int
	errors atomic.Int64
}

func startFlood(t *testing.T, addr string, clients int) *flood {
	ctx, cancel := context.WithCancel(context.Background())
	f := &flood{cancel: cancel, tr: &http.Transport{MaxIdleConnsPerHost: clients}, status: map[int]int{}}
	t.Cleanup(func() { f.stop() })
	client := &http.Client{Transport: f.tr, Timeout: time.Minute}
	base := "http://" + addr
	queries := []struct{ method, path, body string }{
		{http.MethodGet, "/v1/stores/counts/keys?limit=1000", ""},
		{http.MethodGet, "/v1/stores/counts/count", ""},
		{http.MethodPost, "/v2/query", `{"store":"counts","partitions":[1],"query":{"type":"RangeQuery"}}`},
		{http.MethodGet, "/v1/stores/counts/keys/k123", ""},
	}
	for i := range clients {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for n := i; ctx.Err() == nil; n++ {
				q := queries[n%len(queries)]
				req, err := http.NewRequestWithContext(ctx, q.method, base+q.path, strings.NewReader(q.body))
				if err != nil {
					panic(err)
				}
				if q.body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				resp, err := client.Do(req)
				if err != nil {
					// Not up yet, or stopping: do not spin.
					f.errors.Add(1)
					time.Sleep(10 * time.Millisecond)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				f.mu.Lock()
				f.status[resp.StatusCode]++
				f.mu.Unlock()
			}
		}()
	}
	return f
}

// answered is the number of queries answered 200 so far.
func (f *flood) answered() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status[http.StatusOK]
}

// stop ends the flood (again: no-op) and returns the number of answers by status code.
func (f *flood) stop() map[int]int {
	f.cancel()
	f.wg.Wait()
	f.tr.CloseIdleConnections()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}
