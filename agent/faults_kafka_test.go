//go:build kafka && !race

// Faults of a 3-node Apache Kafka 4.4 cluster under an exactly-once agent (issue 28, item 3;
// docs/reliability.md): a partition leader killed, the transaction coordinator's node
// killed in the middle of a commit, the group coordinator's node killed, a node paused for
// 30 s, a node restarted, all three restarted. Each test runs an agent process
// (replicaProcess) with the shipped defaults, counting a steady input, and checks what a
// client independent of the agent's sarama (franz-go) reads read_committed from the
// output: every count of every key exactly once. They run without the race detector, as the
// other fault tests do (faults_test.go says why).

package agent

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// faultCountScript counts the records of each key of the input topic in a logged store
// and writes every count to the output topic: n records of a key give the counts 1..n,
// each once, so a record lost or processed twice, or a store write applied twice, shows in
// the output.
const faultCountScript = `
local s = require("stoat")
local b = s.builder()
b:addStateStore{name = "counts", type = "timestampedKeyValue", valueSerde = "long"}
b:stream(%q):process(function()
  local store
  return {
    init = function(ctx) store = ctx:getStateStore("counts") end,
    process = function(ctx, k)
      local n = (store:get(k) or 0) + 1
      store:put(k, n)
      ctx:forward(k, n)
    end,
  }
end, {stores = {"counts"}}):to(%q, {valueSerde = "long"})
return b
`

const (
	// faultPartitions: every node leads some partitions of each topic.
	faultPartitions = 6
	faultKeys       = 60
	// faultRate is the input's records per second: steady, so that a stall shows, and light
	// enough for a 2-core machine running three brokers beside the agent.
	faultRate = 200
	// faultRecovery bounds how long the output may stall after a fault: a hang, not a slow
	// recovery, exceeds it.
	faultRecovery = 3 * time.Minute
	// pauseFor is how long the paused node stays frozen: longer than the brokers' session
	// (broker.session.timeout.ms, 9 s), shorter than the agent's request.timeout.ms (30 s)
	// plus its retries.
	pauseFor = 30 * time.Second
)

// faultRounds is how often each test injects its fault, into the same running agent:
// STOATFLOW_KAFKA_FAULT_ROUNDS (make soak), else 1.
func faultRounds() int {
	if n, err := strconv.Atoi(os.Getenv("STOATFLOW_KAFKA_FAULT_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 1
}

// faultRig is an agent process counting a steady input on the 3-node cluster, the feeder
// of its input and the independent reader of its output.
type faultRig struct {
	t       *testing.T
	c       *kafkatest.Cluster
	in, out string
	app     string
	txnID   string // the agent's transactional.id
	agent   *replicaProcess
	logs    *lockedBuffer // the agent's log (warnings and errors)
	exited  chan error    // the agent's exit
	feed    *feeder
	read    *outputReader
	started time.Time
}

// faultTransactionVersion is the transaction.version the 3-node cluster of the fault tests
// is formatted with: STOATFLOW_KAFKA_FAULT_TV (1, the protocol before KIP-890, for make
// soak), else Kafka 4.4's default 2.
func faultTransactionVersion(t *testing.T) int {
	switch v := os.Getenv("STOATFLOW_KAFKA_FAULT_TV"); v {
	case "", "2":
		return 2
	case "1":
		return 1
	default:
		t.Fatalf("STOATFLOW_KAFKA_FAULT_TV = %q: want 1 or 2", v)
		return 0
	}
}

func newFaultRig(t *testing.T) *faultRig {
	t.Helper()
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 3, Exclusive: true, TransactionVersion: faultTransactionVersion(t)})
	r := &faultRig{t: t, c: c, in: kafkatest.Name(t, "in"), out: kafkatest.Name(t, "out"), app: kafkatest.Name(t, "app")}
	c.CreateTopic(t, r.in, faultPartitions, nil)
	c.CreateTopic(t, r.out, faultPartitions, nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.lua"), fmt.Appendf(nil, faultCountScript, r.in, r.out), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	// The shipped defaults but for what a test must name: exactly-once's commit interval
	// (100 ms), session, request and transaction timeouts are Kafka Streams' defaults.
	toml := fmt.Sprintf(`
[agent]
scripts = ["p.lua"]
http.listen = %q
[streams]
application.id = %q
bootstrap.servers = %q
processing.guarantee = "exactly_once_v2"
state.dir = %q
`, addr, r.app, c.BootstrapServers(), filepath.Join(dir, "state"))
	path := filepath.Join(dir, "agent.toml")
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r.txnID = cfg.ApplicationID + "-" + cfg.GroupInstanceID // kafkaio.MakeTransactional
	r.logs = &lockedBuffer{}
	r.agent = &replicaProcess{config: path, addr: addr, stderr: r.logs}
	r.read = startOutputReader(t, c, r.out)
	r.agent.start(t)
	r.exited = make(chan error, 1)
	go func(cmd interface{ Wait() error }) { r.exited <- cmd.Wait() }(r.agent.cmd)
	t.Cleanup(func() {
		if r.agent.cmd.ProcessState == nil {
			_ = r.agent.cmd.Process.Kill()
			<-r.exited
		}
		if t.Failed() {
			t.Logf("the agent's log:\n%s", r.logs.String())
		}
	})
	r.until(2*time.Minute, "the agent RUNNING", func() bool { return r.agent.state() == "RUNNING" })
	r.feed = startFeeder(t, c, r.in)
	r.started = time.Now()
	return r
}

// until polls cond until it holds, failing the test after within or when the agent exits.
func (r *faultRig) until(within time.Duration, what string, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		select {
		case err := <-r.exited:
			r.exited <- err
			r.t.Fatalf("the agent exited (%v) while waiting for %s", err, what)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.dumpAgent()
			r.t.Fatalf("after %v: %s", within, what)
		}
	}
}

// dumpAgent has the running agent write its goroutines' stacks to its log (SIGQUIT) and
// exit, so that a stuck agent shows where it waits.
func (r *faultRig) dumpAgent() {
	if r.agent.cmd.Process.Signal(syscall.SIGQUIT) != nil {
		return
	}
	select {
	case err := <-r.exited:
		r.exited <- err
	case <-time.After(10 * time.Second):
	}
}

// faultOutcome is what one fault did to the output.
type faultOutcome struct {
	// took is how long the fault itself took: a pause, a restart until the nodes serve.
	took time.Duration
	// stall is the longest time the reader read nothing, from the start of the fault
	// until the output flowed again after it.
	stall time.Duration
	// flowed is the time from the end of the fault until the reader read a record written
	// to the input after it: the output flows again.
	flowed time.Duration
	// failures is how many commit barriers failed (epochs aborted and processed again).
	failures float64
	// agent summarizes the agent's warnings during the fault.
	agent string
}

// round waits until the output flows, runs inject (the fault; it returns once the fault
// has been done: a paused node resumed, restarted nodes serving; and the nodes it killed),
// waits until the output flows again, logs what the fault did, starts the killed nodes
// again and waits until the cluster is whole for the next round.
func (r *faultRig) round(fault string, inject func() (killed []int)) faultOutcome {
	r.t.Helper()
	r.waitFlowing(time.Now())
	failuresBefore := r.failedCommits()
	logsBefore := len(r.logs.String())
	start := time.Now()
	killed := inject()
	end := time.Now()
	flowing := r.waitFlowing(end)
	o := faultOutcome{took: end.Sub(start), stall: r.read.stall(start, flowing), flowed: flowing.Sub(end)}
	o.failures = r.failedCommits() - failuresBefore
	warnings := r.logs.String()[logsBefore:]
	o.agent = summarizeLog(warnings)
	ms := func(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }
	r.t.Logf("%s: the fault took %v; output stalled %v at most, flowed again %v after the fault; %v failed commit barriers; agent: %s",
		fault, ms(o.took), ms(o.stall), ms(o.flowed), o.failures, o.agent)
	if testing.Verbose() && warnings != "" {
		// Whole, with their errors: what the agent did, for docs/reliability.md and make soak.
		r.t.Logf("the agent's warnings during the fault:\n%s", warnings)
	}
	if len(killed) > 0 {
		r.c.Restart(r.t, killed...)
	}
	r.c.WaitHealthy(r.t)
	return o
}

// waitFlowing waits until the reader has read a record written to the input at since or
// later, and returns when it did.
func (r *faultRig) waitFlowing(since time.Time) time.Time {
	r.t.Helper()
	var at time.Time
	r.until(faultRecovery, fmt.Sprintf("output of input written after %s", since.Format("15:04:05.000")), func() bool {
		var ok bool
		at, ok = r.read.flowing(since)
		return ok
	})
	return at
}

// roles says what node id does for the agent: the partitions it leads, the coordinators it is.
func (r *faultRig) roles(id int) string {
	r.t.Helper()
	var roles []string
	for _, topic := range []struct{ name, topic string }{{"in", r.in}, {"out", r.out}, {"changelog", pipeline.ChangelogTopic(r.app, "counts")}} {
		var led []string
		for p := range int32(faultPartitions) {
			if r.c.Leader(r.t, topic.topic, p) == id {
				led = append(led, strconv.Itoa(int(p)))
			}
		}
		roles = append(roles, fmt.Sprintf("leads %s %s", topic.name, strings.Join(led, ",")))
	}
	if r.c.TxnCoordinator(r.t, r.txnID) == id {
		roles = append(roles, "transaction coordinator")
	}
	if r.c.GroupCoordinator(r.t, r.app) == id {
		roles = append(roles, "group coordinator")
	}
	return fmt.Sprintf("node %d (%s)", id, strings.Join(roles, "; "))
}

// failedCommits and commits read stoatflow_commit_commits_total from the agent.
func (r *faultRig) failedCommits() float64 {
	return r.metric(`stoatflow_commit_commits_total{result="failure"}`)
}

func (r *faultRig) commits() float64 {
	return r.metric(`stoatflow_commit_commits_total{result="success"}`)
}

// metric reads one series of the agent's /metrics.
func (r *faultRig) metric(series string) float64 {
	r.t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + r.agent.addr + "/metrics")
	if err != nil {
		r.t.Fatalf("the agent's metrics: %v", err)
	}
	defer resp.Body.Close()
	series += " "
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				r.t.Fatalf("the agent's metrics: %q: %v", sc.Text(), err)
			}
			return f
		}
	}
	r.t.Fatalf("the agent's metrics have no %s", series)
	return math.NaN()
}

// logMsg matches a slog text line's level and message, quoted or (one word) not.
var logMsg = regexp.MustCompile(`level=(\w+) msg=(?:"((?:[^"\\]|\\.)*)"|(\S+))`)

// summarizeLog names the distinct messages of a stretch of the agent's log, with how many
// times each came: "no warning" when it logged nothing.
func summarizeLog(log string) string {
	count := map[string]int{}
	var order []string
	for _, m := range logMsg.FindAllStringSubmatch(log, -1) {
		k := m[1] + " " + m[2] + m[3]
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	if len(order) == 0 {
		return "no warning"
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%q ×%d", k, count[k]))
	}
	return strings.Join(parts, ", ")
}

// finish stops the input, waits for its last count, stops the agent (SIGTERM) and checks
// the output: every count exactly once, and nothing after (no transaction left open).
func (r *faultRig) finish() {
	r.t.Helper()
	total := r.feed.finish(r.t)
	took := time.Since(r.started)
	want := wantCounts(total, faultKeys)
	if !r.read.await(faultRecovery, want) {
		select {
		case err := <-r.exited:
			r.exited <- err
			r.t.Errorf("the agent exited: %v", err)
		default:
			r.dumpAgent()
		}
		r.read.check(r.t, want) // says what is wrong when a count is missing or repeated
		r.t.Fatalf("no count for %v: the agent does not process", faultRecovery)
	}
	if err := r.agent.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		r.t.Fatal(err)
	}
	select {
	case err := <-r.exited:
		if err != nil {
			r.t.Fatalf("agent exit: %v", err)
		}
	case <-time.After(2 * time.Minute):
		r.t.Fatal("the agent did not stop within 2 minutes of SIGTERM")
	}
	// A record after the agent's last one in every partition: read_committed returns it
	// once every transaction before it has ended, and with it everything the agent wrote.
	cl := r.c.Client(r.t, kgo.DefaultProduceTopic(r.out), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(faultPartitions) {
		if err := cl.ProduceSync(r.t.Context(), &kgo.Record{Key: []byte(endKey), Partition: p}).FirstErr(); err != nil {
			r.t.Fatal(err)
		}
	}
	r.until(faultRecovery, "the end of every output partition (a transaction left open?)", r.read.ended)
	r.read.check(r.t, want)
	r.t.Logf("%d records in %v (%.0f/s): 0 lost, 0 duplicated", total, took.Round(time.Second), float64(total)/took.Seconds())
}

// feeder writes the input at faultRate: keys k0..k(faultKeys-1) in turn, each record
// stamped with the time it is produced. Its client is idempotent with unlimited retries
// (franz-go's defaults), so every record is written once, whatever the cluster does.
type feeder struct {
	cl     *kgo.Client
	sent   int // written by the feeding goroutine; read once it is done
	stop   chan struct{}
	done   chan struct{}
	failed atomic.Pointer[error]
}

func startFeeder(t *testing.T, c *kafkatest.Cluster, topic string) *feeder {
	f := &feeder{stop: make(chan struct{}), done: make(chan struct{})}
	// Short timeouts: a request to a paused node is given up soon and sent again to the
	// partition's next leader, so the input itself does not stall for long.
	f.cl = c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequestTimeoutOverhead(time.Second),
		kgo.ProduceRequestTimeout(2*time.Second), kgo.DialTimeout(time.Second), kgo.MaxBufferedRecords(1<<20))
	go func() {
		defer close(f.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-f.stop:
				return
			case <-tick.C:
			}
			for range faultRate / 100 {
				rec := &kgo.Record{Key: fmt.Appendf(nil, "k%d", f.sent%faultKeys), Value: []byte("v"), Timestamp: time.Now()}
				f.sent++
				f.cl.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
					if err != nil {
						f.failed.CompareAndSwap(nil, &err)
					}
				})
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-f.stop:
		default:
			close(f.stop)
		}
		<-f.done
	})
	return f
}

// finish stops feeding and returns how many records were written.
func (f *feeder) finish(t *testing.T) int {
	t.Helper()
	close(f.stop)
	<-f.done
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := f.cl.Flush(ctx); err != nil {
		t.Fatalf("flushing the input: %v", err)
	}
	if e := f.failed.Load(); e != nil {
		t.Fatalf("an input record was not written: %v", *e)
	}
	return f.sent
}

// endKey marks the record finish writes after the agent's last in every output partition.
const endKey = "end"

// outputReader reads the output read_committed, with franz-go, from the start: the counts
// it has seen, when it read them, and the end markers.
type outputReader struct {
	mu    sync.Mutex
	seen  map[string]map[int64]int
	ends  map[int32]bool
	reads []outputRead
}

// outputRead is one poll that returned records.
type outputRead struct {
	at      time.Time // when the poll returned
	written time.Time // the latest time an input record of those it read was written
}

func startOutputReader(t *testing.T, c *kafkatest.Cluster, topic string) *outputReader {
	o := &outputReader{seen: map[string]map[int64]int{}, ends: map[int32]bool{}}
	// Short timeouts, as the feeder's: the reader should not add a wait of its own to the
	// recovery it measures.
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(250*time.Millisecond),
		kgo.RequestTimeoutOverhead(time.Second), kgo.DialTimeout(time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			now := time.Now()
			o.mu.Lock()
			var written time.Time
			fs.EachRecord(func(rec *kgo.Record) {
				if string(rec.Key) == endKey {
					o.ends[rec.Partition] = true
					return
				}
				k := string(rec.Key)
				if o.seen[k] == nil {
					o.seen[k] = map[int64]int{}
				}
				var n int64 = -1
				if len(rec.Value) == 8 {
					n = int64(binary.BigEndian.Uint64(rec.Value))
				}
				o.seen[k][n]++
				if rec.Timestamp.After(written) {
					written = rec.Timestamp
				}
			})
			if !written.IsZero() {
				o.reads = append(o.reads, outputRead{at: now, written: written})
			}
			o.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return o
}

// flowing reports whether a record written to the input at since or later has been read,
// and when.
func (o *outputReader) flowing(since time.Time) (time.Time, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, rd := range o.reads {
		if !rd.at.Before(since) && !rd.written.Before(since) {
			return rd.at, true
		}
	}
	return time.Time{}, false
}

// stall is the longest time from..to in which nothing was read.
func (o *outputReader) stall(from, to time.Time) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	var longest time.Duration
	last := from
	for _, rd := range o.reads {
		if rd.at.Before(from) || rd.at.After(to) {
			continue
		}
		longest = max(longest, rd.at.Sub(last))
		last = rd.at
	}
	return max(longest, to.Sub(last))
}

// reached reports whether every key has all its counts, 1..want.
func (o *outputReader) reached(want map[string]int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, n := range want {
		if int64(len(o.seen[k])) < n {
			return false
		}
	}
	return true
}

// await waits until every key has all its counts, 1..want, or nothing new was read for
// stall, and reports whether they all came.
func (o *outputReader) await(stall time.Duration, want map[string]int64) bool {
	read, since := -1, time.Now()
	for !o.reached(want) {
		o.mu.Lock()
		n := len(o.reads)
		o.mu.Unlock()
		if n != read {
			read, since = n, time.Now()
		}
		if time.Since(since) > stall {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// ended reports whether the end marker of every partition has been read.
func (o *outputReader) ended() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.ends) == faultPartitions
}

// check fails the test unless the output holds each count of each key exactly once and
// nothing else.
func (o *outputReader) check(t *testing.T, want map[string]int64) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	var bad []string
	for k, counts := range o.seen {
		n, ok := want[k]
		if !ok {
			bad = append(bad, fmt.Sprintf("key %q not in the input", k))
			continue
		}
		for c, times := range counts {
			switch {
			case c < 1 || c > n:
				bad = append(bad, fmt.Sprintf("%s: count %d, outside 1..%d", k, c, n))
			case times != 1:
				bad = append(bad, fmt.Sprintf("%s: count %d read %d times", k, c, times))
			}
		}
		if int64(len(counts)) < n {
			bad = append(bad, fmt.Sprintf("%s: %d of the counts 1..%d", k, len(counts), n))
		}
	}
	for k := range want {
		if o.seen[k] == nil {
			bad = append(bad, fmt.Sprintf("%s: no count", k))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		t.Fatalf("the output is not exact: %d problems, e.g. %v", len(bad), bad[:min(len(bad), 10)])
	}
}

// TestKafkaFaultLeaderKilled: the leader of an output partition is killed (SIGKILL) while
// the agent writes to it; the input partition of the same number is led by another node,
// so the agent keeps reading records whose output has no leader until the cluster elects
// one (after broker.session.timeout.ms).
func TestKafkaFaultLeaderKilled(t *testing.T) {
	r := newFaultRig(t)
	for range faultRounds() {
		r.round("output partition leader killed", func() []int {
			victim := r.outputLeader()
			t.Logf("killing %s", r.roles(victim))
			r.c.Kill(t, victim)
			return []int{victim}
		})
	}
	r.finish()
}

// outputLeader is the leader of an output partition, one that leads neither the input
// partition of the same number nor a coordinator of the agent where there is one.
func (r *faultRig) outputLeader() int {
	r.t.Helper()
	best, score := 0, math.MaxInt
	txn, group := r.c.TxnCoordinator(r.t, r.txnID), r.c.GroupCoordinator(r.t, r.app)
	for p := range int32(faultPartitions) {
		l := r.c.Leader(r.t, r.out, p)
		s := 0
		for _, other := range []int{r.c.Leader(r.t, r.in, p), txn, group} {
			if other == l {
				s++
			}
		}
		if s < score {
			best, score = l, s
		}
	}
	return best
}

// TestKafkaFaultTxnCoordinatorKilledMidCommit: the transaction coordinator's node freezes
// (SIGSTOP) and is killed (SIGKILL) once the agent's commit barrier waits on it.
func TestKafkaFaultTxnCoordinatorKilledMidCommit(t *testing.T) {
	r := newFaultRig(t)
	for range faultRounds() {
		r.round("transaction coordinator killed mid-commit", func() []int {
			victim := r.c.TxnCoordinator(t, r.txnID)
			t.Logf("freezing, then killing %s", r.roles(victim))
			r.c.Pause(t, victim)
			r.waitCommitStuck()
			r.c.Kill(t, victim)
			return []int{victim}
		})
	}
	r.finish()
}

// waitCommitStuck waits until no commit barrier has succeeded for 20 commit intervals:
// with records coming in all the time, a barrier has begun and waits.
func (r *faultRig) waitCommitStuck() {
	r.t.Helper()
	const still = 20 * 100 * time.Millisecond // commit.interval.ms is 100 under exactly-once
	last, since := r.commits(), time.Now()
	r.until(faultRecovery, "a commit barrier waiting on the frozen coordinator", func() bool {
		if n := r.commits(); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= still
	})
}

// TestKafkaFaultGroupCoordinatorKilled: the node coordinating the agent's consumer group
// is killed (SIGKILL); the offsets of every transaction go to the group coordinator
// (TxnOffsetCommit), and the consumer's heartbeats too.
func TestKafkaFaultGroupCoordinatorKilled(t *testing.T) {
	r := newFaultRig(t)
	for range faultRounds() {
		r.round("group coordinator killed", func() []int {
			victim := r.c.GroupCoordinator(t, r.app)
			t.Logf("killing %s", r.roles(victim))
			r.c.Kill(t, victim)
			return []int{victim}
		})
	}
	r.finish()
}

// TestKafkaFaultNodePaused: the transaction coordinator's node freezes (SIGSTOP) for 30 s,
// as a long GC pause or a stalled VM would: its connections stay open and nothing answers,
// the cluster fences it after broker.session.timeout.ms and moves its leaderships, and it
// comes back as a follower.
func TestKafkaFaultNodePaused(t *testing.T) {
	r := newFaultRig(t)
	for range faultRounds() {
		r.round("node paused 30 s", func() []int {
			victim := r.c.TxnCoordinator(t, r.txnID)
			t.Logf("freezing for %v %s", pauseFor, r.roles(victim))
			r.c.Pause(t, victim)
			time.Sleep(pauseFor) // the fault itself: the node stays frozen this long
			r.c.Resume(t, victim)
			return nil
		})
	}
	r.finish()
}

// TestKafkaFaultNodeRestarted: the group coordinator's node is restarted as an operator
// does (SIGTERM: a controlled shutdown that moves its leaderships first, then a start).
func TestKafkaFaultNodeRestarted(t *testing.T) {
	r := newFaultRig(t)
	for range faultRounds() {
		r.round("node restarted", func() []int {
			victim := r.c.GroupCoordinator(t, r.app)
			t.Logf("restarting %s", r.roles(victim))
			r.c.Restart(t, victim)
			return nil
		})
	}
	r.finish()
}

// TestKafkaFaultAllRestarted: the three nodes shut down together and start again: for a
// while there is no cluster at all.
func TestKafkaFaultAllRestarted(t *testing.T) {
	r := newFaultRig(t)
	for range faultRounds() {
		r.round("all three nodes restarted", func() []int {
			r.c.Restart(t, r.c.NodeIDs()...)
			return nil
		})
	}
	r.finish()
}
