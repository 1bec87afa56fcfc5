package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/metrics"
)

// silentBroker accepts TCP connections and never answers; it closes them at the end of
// the test.
func silentBroker(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	return ln.Addr().String()
}

// A broker that accepts connections and never answers is reported at once and on every
// retry, at doubling waits: a log line naming the broker, the config key that lists it, how
// long the agent has waited and when it tries again, the broker-reachable gauge at 0, and
// the reason in /readyz's body. The agent keeps waiting until it is stopped.
func TestSilentBrokerIsReported(t *testing.T) {
	addr := silentBroker(t)
	cfg := testConfig(t, []string{addr}, countScript, "request.timeout.ms = 300\n")
	logs := &lockedBuffer{}
	m := metrics.New()
	a, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	pollFor(t, 20*time.Second, "three logged retries", func() bool {
		return strings.Contains(logs.String(), "attempt=3")
	})
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "broker does not answer; retrying (is streams.bootstrap.servers right?)") &&
			(!strings.Contains(line, "broker="+addr) || !strings.Contains(line, "elapsed=") ||
				!strings.Contains(line, "key=streams.bootstrap.servers") || !strings.Contains(line, "config="+cfg.Path)) {
			t.Fatalf("retry logged without the broker, the time waited or the config key: %s", line)
		}
	}
	for attempt, wait := range map[int]string{1: "1s", 2: "2s", 3: "4s"} {
		if !regexp.MustCompile(fmt.Sprintf(`attempt=%d elapsed=\S+ took=\S+ "retry in"=%s `, attempt, wait)).MatchString(logs.String()) {
			t.Fatalf("attempt %d does not wait %s before the next:\n%s", attempt, wait, logs.String())
		}
	}
	if got := testutil.ToFloat64(m.BrokerReachable.WithLabelValues(addr)); got != 0 {
		t.Fatalf("broker_reachable{broker=%q} = %v, want 0", addr, got)
	}
	httpAddr, err := a.HTTPAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + httpAddr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || body["state"] != "CREATED" ||
		!strings.Contains(body["reason"], "no broker of streams.bootstrap.servers answers") || !strings.Contains(body["reason"], addr) {
		t.Fatalf("/readyz = %d %v, want 503 with the state and the reason naming %s", resp.StatusCode, body, addr)
	}
	cancel()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "waiting for a broker") {
			t.Fatalf("Run = %v, want it stopped while waiting for a broker", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not stop while waiting for a broker")
	}
}

// Once a bootstrap server answers, the gauge says so and the agent goes on.
func TestReachableBrokerIsReported(t *testing.T) {
	reachableBrokerIsReported(t, onKfake(t, 1, "in", "out"))
}

func reachableBrokerIsReported(t *testing.T, b *brokerUnderTest) {
	m := metrics.New()
	ra := startAgentWith(t, b.config(t, countScript, ""), m)
	defer ra.stop(t)
	for _, broker := range b.brokers {
		if got := testutil.ToFloat64(m.BrokerReachable.WithLabelValues(broker)); got != 1 {
			t.Fatalf("broker_reachable{broker=%q} = %v, want 1", broker, got)
		}
	}
	if _, reason := ra.a.state.CurrentWithReason(); reason != "" {
		t.Fatalf("reason %q while RUNNING", reason)
	}
}
