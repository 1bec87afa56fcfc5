package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/metrics"
)

// testBroker starts an in-process broker with the given topics (partitions each).
func testBroker(t *testing.T, partitions int32, topics ...string) []string {
	t.Helper()
	emb, err := kafkaio.StartEmbedded("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Close)
	specs := map[string]kafkaio.TopicSpec{}
	for _, tp := range topics {
		specs[tp] = kafkaio.TopicSpec{Partitions: partitions, ReplicationFactor: -1}
	}
	if err := kafkaio.EnsureTopics(emb.Addrs(), saramaTestConfig(), specs); err != nil {
		t.Fatal(err)
	}
	return emb.Addrs()
}

// saramaTestConfig is the config of the tests' own clients. Their producers are
// idempotent: a broker may append a request and still answer it with a retriable error
// (REQUEST_TIMED_OUT, or a connection lost before the answer), and a retry would then
// write its records twice, a duplicate in the input that an exactly-once check would
// blame on the agent. With idempotence the broker drops the retry.
func saramaTestConfig() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V3_6_0_0
	c.Producer.Return.Successes = true
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	return c
}

// testThreads is num.stream.threads for the agents the tests start: STOATFLOW_TEST_THREADS,
// or 1. `make test` runs the agents' end-to-end tests, the examples and the fault loops with
// 2 and 4 workers as well as 1.
func testThreads() int {
	if n, err := strconv.Atoi(os.Getenv("STOATFLOW_TEST_THREADS")); err == nil && n > 0 {
		return n
	}
	return 1
}

// agentTOML is the config of a test agent that runs dir/p.lua with its state in dir/state
// and an application id made unique from prefix, with testThreads workers unless extra
// says how many.
func agentTOML(brokers []string, dir, prefix, extra string) string {
	if n := testThreads(); n > 1 && !strings.Contains(extra, "num.stream.threads") {
		extra = fmt.Sprintf("num.stream.threads = %d\n%s", n, extra)
	}
	return fmt.Sprintf(`
[agent]
scripts = ["p.lua"]
http.listen = "127.0.0.1:0"
lua.call.timeout = "500ms"
shutdown.timeout = "10s"

[streams]
application.id = "%s-%d"
bootstrap.servers = %q
state.dir = %q
%s
`, prefix, time.Now().UnixNano(), strings.Join(brokers, ","), filepath.Join(dir, "state"), extra)
}

// testConfig writes script and a config pointing at brokers into a temp dir.
func testConfig(t testing.TB, brokers []string, script, extra string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.lua"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	toml := agentTOML(brokers, dir, "it", extra)
	if !strings.Contains(extra, "commit.interval.ms") {
		toml += "commit.interval.ms = 50\n"
	}
	cfg, err := config.Parse([]byte(toml), dir, "test.toml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

type runningAgent struct {
	a      *Agent
	cancel context.CancelFunc
	done   chan error
	out    *lockedBuffer
	logs   *lockedBuffer // every log line, debug included
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func startAgent(t *testing.T, cfg *config.Config) *runningAgent {
	t.Helper()
	return startAgentWith(t, cfg, nil)
}

func startAgentWith(t *testing.T, cfg *config.Config, m *metrics.Metrics) *runningAgent {
	t.Helper()
	return startAgentUntil(t, cfg, m, StateRunning)
}

// startAgentUntil starts an agent and waits until it reaches one of states.
func startAgentUntil(t *testing.T, cfg *config.Config, m *metrics.Metrics, states ...AppState) *runningAgent {
	t.Helper()
	return startAgentMade(t, cfg, m, nil, states...)
}

// startAgentMade is startAgentUntil with prepare run on the agent before it runs.
func startAgentMade(t *testing.T, cfg *config.Config, m *metrics.Metrics, prepare func(*Agent), states ...AppState) *runningAgent {
	t.Helper()
	out, logs := &lockedBuffer{}, &lockedBuffer{}
	var w io.Writer = logs
	if testing.Verbose() {
		w = io.MultiWriter(logs, os.Stderr)
	}
	logger := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := New(cfg, Options{Logger: logger, Stdout: out, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if prepare != nil {
		prepare(a)
	}
	ra := &runningAgent{a: a, cancel: cancel, done: make(chan error, 1), out: out, logs: logs}
	go func() { ra.done <- a.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	if st, err := a.WaitState(wctx, states...); err != nil {
		cancel()
		t.Fatalf("agent did not reach %v (state %s): %v; run: %v", states, st, err, <-ra.done)
	}
	return ra
}

// stop cancels the agent (what SIGTERM does) and returns Run's error.
func (ra *runningAgent) stop(t *testing.T) error {
	t.Helper()
	ra.cancel()
	select {
	case err := <-ra.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("agent did not stop within 30s")
		return nil
	}
}

// producedAt is the timestamp produce gives its first record: an hour ago, on a whole hour
// (so on every window grid the tests use). Not a fixed date: the changelogs of window stores
// are deleted after their retention, as Kafka Streams creates them, so a broker would
// delete a fixed date's records of long ago while a test reads them.
var producedAt = time.Now().Add(-time.Hour).Truncate(time.Hour).UnixMilli()

// promFloat is ms as the Prometheus text format writes a gauge's value.
func promFloat(ms int64) string { return strconv.FormatFloat(float64(ms), 'g', -1, 64) }

func produce(t *testing.T, brokers []string, topic string, partition int32, n int, headers []sarama.RecordHeader, from int) {
	t.Helper()
	p, err := sarama.NewSyncProducer(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, 0, n)
	for i := from; i < from+n; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{
			Topic: topic, Partition: partition,
			Key:       sarama.StringEncoder(fmt.Sprintf("k%d", i)),
			Value:     sarama.StringEncoder(fmt.Sprintf("v%d", i)),
			Headers:   headers,
			Timestamp: time.UnixMilli(producedAt + int64(i)),
		})
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
}

// readAll consumes topic from the beginning until want records arrived or the deadline passed.
func readAll(t *testing.T, brokers []string, topic string, want int) []*sarama.ConsumerMessage {
	t.Helper()
	return readUntil(t, brokers, topic, func(got []*sarama.ConsumerMessage) bool { return len(got) >= want })
}

// readUntil consumes topic from the beginning until done says so or the deadline passed.
func readUntil(t *testing.T, brokers []string, topic string, done func([]*sarama.ConsumerMessage) bool) []*sarama.ConsumerMessage {
	t.Helper()
	ch := consumeAll(t, brokers, topic, saramaTestConfig())
	var out []*sarama.ConsumerMessage
	deadline := time.After(30 * time.Second)
	for !done(out) {
		select {
		case m := <-ch:
			out = append(out, m)
		case <-deadline:
			t.Fatalf("read %d records from %s and the condition still does not hold", len(out), topic)
		}
	}
	return out
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// consumeAll reads every partition of topic from the beginning (with cfg's isolation level)
// into one channel until the test ends.
func consumeAll(t *testing.T, brokers []string, topic string, cfg *sarama.Config) <-chan *sarama.ConsumerMessage {
	t.Helper()
	c, err := sarama.NewConsumer(brokers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := c.Partitions(topic)
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	ch := make(chan *sarama.ConsumerMessage, 1024)
	done := make(chan struct{})
	var pcs []sarama.PartitionConsumer
	t.Cleanup(func() {
		close(done)
		for _, pc := range pcs {
			pc.Close()
		}
		c.Close()
	})
	for _, p := range parts {
		pc, err := c.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		pcs = append(pcs, pc)
		go func() {
			for m := range pc.Messages() {
				select {
				case ch <- m:
				case <-done:
					return
				}
			}
		}()
	}
	return ch
}

const upperScript = `
local s = require("stoat")
local b = s.builder()
b:stream("in"):mapValues(function(v, r) return v:upper() .. "@" .. r.headers["trace"] end):to("out")
return b
`

func TestAgentEndToEndWithHeaders(t *testing.T) {
	endToEndWithHeaders(t, onKfake(t, 2, "in", "out"))
}

func endToEndWithHeaders(t *testing.T, b *brokerUnderTest) {
	brokers, in, out := b.brokers, b.topic(t, "in"), b.topic(t, "out")
	cfg := b.config(t, upperScript, "")
	ra := startAgent(t, cfg)
	hdrs := []sarama.RecordHeader{{Key: []byte("trace"), Value: []byte("t-1")}, {Key: []byte("other"), Value: []byte("x")}}
	produce(t, brokers, in, 0, 5, hdrs, 0)
	produce(t, brokers, in, 1, 5, hdrs, 5)
	got := readAll(t, brokers, out, 10)
	seen := map[string]bool{}
	for _, m := range got {
		seen[string(m.Value)] = true
		if len(m.Headers) != 2 || string(m.Headers[0].Key) != "trace" || string(m.Headers[1].Value) != "x" {
			t.Fatalf("headers not carried: %v", m.Headers)
		}
		k := string(m.Key)
		if want := fmt.Sprintf("V%s@T-1", k[1:]); string(m.Value) != strings.ToUpper(want) && string(m.Value) != fmt.Sprintf("V%s@t-1", k[1:]) {
			t.Fatalf("value %q for key %s", m.Value, k)
		}
		if m.Timestamp.UnixMilli() < producedAt {
			t.Fatalf("timestamp not carried: %v", m.Timestamp)
		}
	}
	if len(seen) != 10 {
		t.Fatalf("distinct outputs %d, want 10", len(seen))
	}
	addr, _ := ra.a.HTTPAddr(context.Background())
	for path, want := range map[string]string{
		"/readyz":      `{"state":"RUNNING","active":"` + cfg.GroupInstanceID + `"}`,
		"/topology/ks": "Topologies:\n   Sub-topology: 0\n    Source: KSTREAM-SOURCE-0000000000 (topics: [" + in + "])\n",
		"/topology":    `"name":"KSTREAM-MAPVALUES-0000000001"`,
	} {
		body := httpGet(t, "http://"+addr+path)
		if !strings.Contains(body, want) {
			t.Fatalf("GET %s = %q, want it to contain %q", path, body, want)
		}
	}
	// Exported once per epoch: poll until the next commit has reported them. Both
	// partitions are read to their end, so they become idle, and the engine's watermark is
	// then the largest stream time (partition 1's), not the smallest. The records consumed
	// are counted once their batch is through the topology, which can be after its outputs
	// reached the broker.
	for _, want := range []string{
		`stoatflow_consumer_records_consumed_total{topic="` + in + `"} 10`,
		`stoatflow_processor_record_e2e_latency_seconds_count{node="KSTREAM-SINK-0000000002"} 10`,
		`stoatflow_consumer_lag_records{partition="1",topic="` + in + `"} 0`,
		`stoatflow_time_stream_time_milliseconds{partition="0",topic="` + in + `"} ` + promFloat(producedAt+4),
		`stoatflow_time_stream_time_milliseconds{partition="1",topic="` + in + `"} ` + promFloat(producedAt+9),
		`stoatflow_time_watermark_milliseconds ` + promFloat(producedAt+9),
	} {
		deadline := time.Now().Add(10 * time.Second)
		for body := ""; !strings.Contains(body, want); body = httpGet(t, "http://"+addr+"/metrics") {
			if time.Now().After(deadline) {
				t.Fatalf("metrics never showed %q:\n%s", want, body)
			}
		}
	}
	if err := ra.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := ra.a.State(); st != StateNotRunning {
		t.Fatalf("state after stop %s", st)
	}
}

// TestStopMidStreamThenRestartLosesNothing stops the agent (as SIGTERM does) while input is
// still arriving, restarts it, and checks every input appears in the output at least once.
func TestStopMidStreamThenRestartLosesNothing(t *testing.T) {
	stopMidStreamThenRestart(t, onKfake(t, 3, "in", "out"))
}

func stopMidStreamThenRestart(t *testing.T, b *brokerUnderTest) {
	brokers, in := b.brokers, b.topic(t, "in")
	cfg := b.config(t, upperScript, "")
	hdrs := []sarama.RecordHeader{{Key: []byte("trace"), Value: []byte("t")}}
	const perRound = 300
	ra := startAgent(t, cfg)
	produce(t, brokers, in, 0, perRound, hdrs, 0)
	produce(t, brokers, in, 1, perRound, hdrs, perRound)
	if err := ra.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	produce(t, brokers, in, 2, perRound, hdrs, 2*perRound)
	ra = startAgent(t, cfg)
	defer ra.stop(t)
	seen := map[string]bool{}
	readUntil(t, brokers, b.topic(t, "out"), func(got []*sarama.ConsumerMessage) bool {
		for _, m := range got[len(got)-min(len(got), 1):] {
			seen[string(m.Key)] = true
		}
		return len(seen) == 3*perRound
	})
}

func TestLuaErrorStopsTheAgentNamingLineAndRecord(t *testing.T) {
	luaErrorStopsTheAgentNamingLineAndRecord(t, onKfake(t, 1, "in", "out"))
}

func luaErrorStopsTheAgentNamingLineAndRecord(t *testing.T, b *brokerUnderTest) {
	script := `local s = require("stoat")
local b = s.builder()
b:stream("in"):mapValues(function(v)
  if v == "v2" then error("bad record") end
  return v
end):to("out")
return b`
	ra := startAgent(t, b.config(t, script, ""))
	produce(t, b.brokers, b.topic(t, "in"), 0, 4, nil, 0)
	select {
	case err := <-ra.done:
		if err == nil || !strings.Contains(err.Error(), b.topic(t, "in")+"-0@2") || !strings.Contains(err.Error(), "p.lua:4: bad record") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent kept running after a Lua error")
	}
	if st := ra.a.State(); st != StateError {
		t.Fatalf("state %s, want ERROR", st)
	}
}

// waitLog polls the agent's log until it holds want, and returns the log.
func (ra *runningAgent) waitLog(t *testing.T, want string) string {
	t.Helper()
	pollFor(t, 30*time.Second, fmt.Sprintf("the log never showed %q", want), func() bool {
		return strings.Contains(ra.logs.String(), want)
	})
	return ra.logs.String()
}

// waitProduced waits until the agent acknowledged n records to topic, failing at once with
// Run's error if the agent stops.
func waitProduced(t *testing.T, ra *runningAgent, m *metrics.Metrics, topic string, n int) {
	t.Helper()
	pollFor(t, 30*time.Second, fmt.Sprintf("the agent did not produce %d records to %s", n, topic), func() bool {
		if st := ra.a.State(); st == StateError || st == StateNotRunning {
			failStopped(t, ra, st, nil)
		}
		return testutil.ToFloat64(m.RecordsProduced.WithLabelValues(topic)) >= float64(n)
	})
}

func failStopped(t *testing.T, ra *runningAgent, st AppState, err error) {
	t.Helper()
	if st == StateError || st == StateNotRunning {
		err = <-ra.done
		ra.done <- err // for the deferred stop
	}
	t.Fatalf("agent in %s want RUNNING: %v", st, err)
}

// "StoatFlow is running" is logged once the application is RUNNING, not while it is still
// REBALANCING.
func TestRunningIsLoggedInRunning(t *testing.T) {
	runningIsLoggedInRunning(t, onKfake(t, 1, "in", "out"))
}

func runningIsLoggedInRunning(t *testing.T, b *brokerUnderTest) {
	ra := startAgent(t, b.config(t, upperScript, ""))
	defer ra.stop(t)
	logs := ra.waitLog(t, "StoatFlow is running")
	running := strings.Index(logs, "to=RUNNING")
	if running < 0 || strings.Index(logs, "StoatFlow is running") < running {
		t.Fatalf("logged before RUNNING:\n%s", logs)
	}
	if n := strings.Count(logs, "StoatFlow is running"); n != 1 {
		t.Fatalf("logged %d times:\n%s", n, logs)
	}
}

// At debug level the agent logs its assignment, every epoch it commits with its size, and
// per store partition whether a restore replays the changelog.
func TestDebugLogs(t *testing.T) {
	debugLogs(t, onKfake(t, 1, "in", "out"))
}

func debugLogs(t *testing.T, b *brokerUnderTest) {
	in := b.topic(t, "in")
	cfg := b.config(t, countScript, "")
	ra := startAgent(t, cfg)
	produce(t, b.brokers, in, 0, 3, nil, 0)
	logs := ra.waitLog(t, `msg="epoch committed" records=`)
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`msg=assignment partitions=[` + in + `-0]`,
		`msg="restore: store partition is up to date with its changelog" store=counts partition=0 "changelog end"=0`,
		`"store bytes"=`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %s:\n%s", want, logs)
		}
	}
	// Without its database the store replays its changelog at the next start.
	if err := os.RemoveAll(filepath.Join(cfg.StateDir, cfg.ApplicationID, "db")); err != nil {
		t.Fatal(err)
	}
	ra = startAgent(t, cfg)
	defer ra.stop(t)
	if logs := ra.logs.String(); !strings.Contains(logs, `msg="restore: replaying the changelog into the store partition" store=counts partition=0 from=0 "changelog end"=3`) {
		t.Errorf("the log lacks the replay:\n%s", logs)
	}
}
