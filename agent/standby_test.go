package agent

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/metrics"
)

// replicaConfigs writes n configs of one application: the same application.id, each agent
// with its own state.dir and group.instance.id ("replica-i"), as replicas on n hosts.
func replicaConfigs(t *testing.T, brokers []string, script string, n int, extra string) []*config.Config {
	t.Helper()
	app := fmt.Sprintf("replicas-%d", time.Now().UnixNano())
	var cfgs []*config.Config
	for i := range n {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "p.lua"), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		toml := fmt.Sprintf(`
[agent]
scripts = ["p.lua"]
http.listen = "127.0.0.1:0"
shutdown.timeout = "10s"

[streams]
application.id = %q
bootstrap.servers = %q
state.dir = %q
group.instance.id = "replica-%d"
application.server = "replica-%d.example:8080"
commit.interval.ms = 50
%s
`, app, strings.Join(brokers, ","), filepath.Join(dir, "state"), i, i, extra)
		cfg, err := config.Parse([]byte(toml), dir, "test.toml")
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, cfg)
	}
	return cfgs
}

// replicaConfigs is replicaConfigs on this broker.
func (b *brokerUnderTest) replicaConfigs(t *testing.T, script string, n int, extra string) []*config.Config {
	t.Helper()
	return replicaConfigs(t, b.brokers, b.script(script), n, b.script(extra))
}

func agentBase(t *testing.T, ra *runningAgent) string {
	t.Helper()
	addr, err := ra.a.HTTPAddr(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// getJSON is a GET answered with a JSON object: its status and body.
func getJSON(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, body
}

// readyzOf is GET /readyz of a running agent: its status and body.
func readyzOf(t *testing.T, ra *runningAgent) (int, map[string]any) {
	t.Helper()
	return getJSON(t, agentBase(t, ra)+"/readyz")
}

// Two, then three agents of one application: the first stays the only active, the others
// are standbys that process and produce nothing, and every count is exact. Before the
// active strategy the joiners took partitions and both sides counted part of every key.
func TestSeveralAgentsOneActiveExactCounts(t *testing.T) {
	severalAgentsOneActive(t, onKfake(t, 3, "in", "out"))
}

func severalAgentsOneActive(t *testing.T, bt *brokerUnderTest) {
	cfgs := bt.replicaConfigs(t, countScript, 3, `processing.guarantee = "exactly_once_v2"`)
	const keys = 30
	ms := []*metrics.Metrics{metrics.New(), metrics.New(), metrics.New()}
	active := startAgentUntil(t, cfgs[0], ms[0], StateRunning)
	defer active.stop(t)
	bt.produceKeys(t, 300, keys, 0, "v")
	b := startAgentUntil(t, cfgs[1], ms[1], StateStandby)
	defer b.stop(t)
	bt.produceKeys(t, 300, keys, 300, "v")
	c := startAgentUntil(t, cfgs[2], ms[2], StateStandby)
	defer c.stop(t)
	bt.produceKeys(t, 300, keys, 600, "v")
	bt.checkExactCounts(t, wantCounts(900, keys))

	if st := active.a.State(); st != StateRunning {
		t.Fatalf("first agent is %s, want RUNNING", st)
	}
	for i, ra := range []*runningAgent{b, c} {
		if st := ra.a.State(); st != StateStandby {
			t.Fatalf("agent %d is %s, want STANDBY", i+1, st)
		}
		if got := testutil.ToFloat64(ms[i+1].RecordsProduced.WithLabelValues(bt.topic(t, "out"))); got != 0 {
			t.Fatalf("standby %d produced %v records to out", i+1, got)
		}
		if got := testutil.ToFloat64(ms[i+1].GroupRole.WithLabelValues(metrics.RoleStandby)); got != 1 {
			t.Fatalf("standby %d: role gauge standby = %v", i+1, got)
		}
		status, body := readyzOf(t, ra)
		if status != http.StatusOK || body["state"] != "STANDBY" || body["active"] != cfgs[0].GroupInstanceID || body["activeHost"] != cfgs[0].ApplicationServer {
			t.Fatalf("standby %d /readyz: %d %v, want 200 STANDBY naming %s as active", i+1, status, body, cfgs[0].GroupInstanceID)
		}
		// Metadata names the active's host; store queries point there instead of answering.
		base := agentBase(t, ra)
		if st, o := getJSON(t, base+"/v1/metadata/counts/k1"); st != http.StatusOK || o["activeHost"] != cfgs[0].ApplicationServer {
			t.Fatalf("standby %d metadata: %d %v, want the active's host %s", i+1, st, o, cfgs[0].ApplicationServer)
		}
		if st, o := getJSON(t, base+"/v1/stores/counts/keys/k1"); st != http.StatusServiceUnavailable || o["code"] != "standby" ||
			!strings.Contains(fmt.Sprint(o["error"]), cfgs[0].ApplicationServer) {
			t.Fatalf("standby %d key query: %d %v, want 503 standby pointing at %s", i+1, st, o, cfgs[0].ApplicationServer)
		}
	}
	if got := testutil.ToFloat64(ms[0].GroupRole.WithLabelValues(metrics.RoleActive)); got != 1 {
		t.Fatalf("active: role gauge active = %v", got)
	}
	if status, body := readyzOf(t, active); status != http.StatusOK || body["state"] != "RUNNING" || body["active"] != cfgs[0].GroupInstanceID {
		t.Fatalf("active /readyz: %d %v", status, body)
	}
}

// A member of the group that speaks another assignment protocol (here a plain consumer
// with the range strategy, as an older agent would) keeps the group; the agent that cannot
// join stops with an error saying what happened, instead of retrying forever or sharing.
func TestAgentRefusedByGroupOfAnotherProtocol(t *testing.T) {
	refusedByGroupOfAnotherProtocol(t, onKfake(t, 2, "in", "out"))
}

func refusedByGroupOfAnotherProtocol(t *testing.T, b *brokerUnderTest) {
	brokers := b.brokers
	cfgs := b.replicaConfigs(t, countScript, 1, "")
	sc := saramaTestConfig()
	sc.Consumer.Group.InstanceId = ""
	group, err := sarama.NewConsumerGroup(brokers, cfgs[0].ApplicationID, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer group.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	joined := make(chan struct{})
	go func() {
		for ctx.Err() == nil {
			_ = group.Consume(ctx, []string{b.topic(t, "in")}, idleHandler{joined: joined})
		}
	}()
	select {
	case <-joined:
	case <-time.After(30 * time.Second):
		t.Fatal("the plain consumer did not join")
	}

	a, err := New(cfgs[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(context.Background()) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "INCONSISTENT_GROUP_PROTOCOL") || !strings.Contains(err.Error(), "never splits") {
			t.Fatalf("run: %v, want the refusal explained", err)
		}
		if !errors.Is(err, sarama.ErrInconsistentGroupProtocol) {
			t.Fatalf("run: %v does not wrap the broker's error", err)
		}
		if st := a.State(); st != StateError {
			t.Fatalf("state %s, want ERROR", st)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the refused agent did not stop")
	}
}

type idleHandler struct{ joined chan struct{} }

func (h idleHandler) Setup(sarama.ConsumerGroupSession) error {
	select {
	case <-h.joined:
	default:
		close(h.joined)
	}
	return nil
}
func (idleHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (idleHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, _ sarama.ConsumerGroupClaim) error {
	<-sess.Context().Done()
	return nil
}

// takeoverKeys is how many keys the takeover test counts before the active dies: the
// state a cold standby would replay whole (STOATFLOW_TAKEOVER_KEYS raises it).
func takeoverKeys() int {
	if n, err := strconv.Atoi(os.Getenv("STOATFLOW_TAKEOVER_KEYS")); err == nil && n > 0 {
		return n
	}
	return 1000
}

// The active dies without leaving the group (its context is cancelled; a static member
// does not leave): once its session times out, the warm standby takes over, replays only
// the changelog tail and goes on from the committed offsets. Every count exactly once.
func TestTakeoverWhenTheActiveDies(t *testing.T) {
	takeoverWhenTheActiveDies(t, onKfake(t, 3, "in", "out"))
}

func takeoverWhenTheActiveDies(t *testing.T, b *brokerUnderTest) {
	const session = 6 * time.Second // kfake's group.min.session.timeout.ms
	cfgs := b.replicaConfigs(t, countScript, 3, `processing.guarantee = "exactly_once_v2"
session.timeout.ms = 6000
heartbeat.interval.ms = 500
transaction.timeout.ms = 5000`)
	keys := takeoverKeys()
	ms := []*metrics.Metrics{metrics.New(), metrics.New(), metrics.New()}
	agents := []*runningAgent{startAgentUntil(t, cfgs[0], ms[0], StateRunning)}
	for i := 1; i < 3; i++ {
		agents = append(agents, startAgentUntil(t, cfgs[i], ms[i], StateStandby))
	}
	for _, ra := range agents[1:] {
		defer ra.stop(t)
	}
	b.produceKeys(t, 2*keys, keys, 0, "v")
	b.checkExactCounts(t, wantCounts(2*keys, keys))
	// The warm standby follows the changelogs: wait until it is at their end, so the
	// takeover replays only what the active commits from now on.
	warm := -1
	pollFor(t, 30*time.Second, "a warm standby at the changelogs' end", func() bool {
		for i := 1; i < 3; i++ {
			if r := agents[i].a.group.Load(); r != nil && r.Warm && agents[i].a.statePosition() == agents[0].a.statePosition() {
				warm = i
				return true
			}
		}
		return false
	})

	// Its lag gauge has a series per changelog partition, each at 0 now.
	pollFor(t, 10*time.Second, "the warm standby's lag gauges at 0", func() bool {
		if testutil.CollectAndCount(ms[warm].StandbyLag) != 3 {
			return false
		}
		for p := range 3 {
			if testutil.ToFloat64(ms[warm].StandbyLag.WithLabelValues("counts", strconv.Itoa(p))) != 0 {
				return false
			}
		}
		return true
	})
	if n := testutil.CollectAndCount(ms[3-warm].StandbyLag); n != 0 {
		t.Fatalf("the cold standby exports %d lag series; it follows nothing", n)
	}

	if err := agents[0].stop(t); err != nil {
		t.Fatal(err)
	}
	died := time.Now()
	b.produceKeys(t, keys, keys, 2*keys, "v")
	ch := consumeAll(t, b.brokers, b.topic(t, "out"), readCommittedConfig())
	var firstOutput time.Duration
	for firstOutput == 0 {
		select {
		case m := <-ch:
			if binary.BigEndian.Uint64(m.Value) == 3 {
				firstOutput = time.Since(died)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("no output from a new active within 60 s of the active's death")
		}
	}
	b.checkExactCounts(t, wantCounts(3*keys, keys))
	if st := agents[warm].a.State(); st != StateRunning {
		t.Fatalf("the warm standby is %s after the takeover, want RUNNING", st)
	}
	if got := testutil.ToFloat64(ms[warm].Takeovers); got != 1 {
		t.Fatalf("takeovers = %v on the new active, want 1", got)
	}
	cold := 3 - warm
	if st := agents[cold].a.State(); st != StateStandby {
		t.Fatalf("the cold standby is %s, want STANDBY", st)
	}
	if got := testutil.ToFloat64(ms[cold].RecordsProduced.WithLabelValues(b.topic(t, "out"))); got != 0 {
		t.Fatalf("the cold standby produced %v records", got)
	}
	if firstOutput > session+10*time.Second {
		t.Fatalf("first committed output %v after the death, want within session.timeout.ms (%v) + 10 s", firstOutput, session)
	}
	t.Logf("takeover: first committed output of the new active %v after the active's death (session.timeout.ms %v, %d keys)",
		firstOutput.Round(10*time.Millisecond), session, keys)
}

// A rolling update: the active stops with leave.group.on.close, as deploy/kubernetes
// configures it, so the group rebalances at once rather than after session.timeout.ms
// (here far longer than the wait), and a standby goes on with every count exact. The
// standby is cold (num.standby.replicas = 0): it holds the state of its start only, and
// replays the rest of the changelog before it processes.
func TestStoppingActiveHandsOverAtOnce(t *testing.T) {
	stoppingActiveHandsOverAtOnce(t, onKfake(t, 2, "in", "out"))
}

func stoppingActiveHandsOverAtOnce(t *testing.T, b *brokerUnderTest) {
	cfgs := b.replicaConfigs(t, countScript, 2, `processing.guarantee = "exactly_once_v2"
session.timeout.ms = 120000
heartbeat.interval.ms = 500
num.standby.replicas = 0`)
	for _, c := range cfgs {
		c.LeaveGroupOnClose = true
	}
	m := metrics.New()
	active := startAgentUntil(t, cfgs[0], metrics.New(), StateRunning)
	standby := startAgentUntil(t, cfgs[1], m, StateStandby)
	defer standby.stop(t)
	b.produceKeys(t, 200, 10, 0, "v")
	b.checkExactCounts(t, wantCounts(200, 10))
	if err := active.stop(t); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := standby.a.WaitState(ctx, StateRunning); err != nil {
		t.Fatalf("the standby did not take over after the active left: %v", err)
	}
	t.Logf("the standby was RUNNING %v after the active left the group", time.Since(stopped).Round(10*time.Millisecond))
	standby.waitLog(t, "StoatFlow is running")
	b.produceKeys(t, 200, 10, 200, "v")
	b.checkExactCounts(t, wantCounts(400, 10))
	if got := testutil.ToFloat64(m.Takeovers); got != 1 {
		t.Fatalf("takeovers = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(m.StandbyLag); n != 0 {
		t.Fatalf("the cold standby exported %d lag series; it follows nothing", n)
	}
	if got := testutil.ToFloat64(m.RecordsRestored.WithLabelValues("counts")); got < 10 {
		t.Fatalf("restored %v changelog records at the takeover, want the 10 keys' updates", got)
	}
}

// A warm standby answers store queries that allow stale stores (enableStaleStores) from
// its copy, which once caught up holds the active's counts, with each partition's lag as
// it knows it; without the opt-in it still points at the active. Both agents name the
// standby's host in key metadata. A cold standby keeps no copy to answer from.
func TestStandbyAnswersStaleReads(t *testing.T) {
	brokers := testBroker(t, 3, "in", "out")
	cfgs := replicaConfigs(t, brokers, countScript, 3, `processing.guarantee = "exactly_once_v2"`)
	const keys = 12
	active := startAgentUntil(t, cfgs[0], metrics.New(), StateRunning)
	defer active.stop(t)
	warm := startAgentUntil(t, cfgs[1], metrics.New(), StateStandby)
	defer warm.stop(t)
	produceKeys(t, brokers, 3, 60, keys, 0, "v")
	checkExactCounts(t, brokers, wantCounts(60, keys))
	pollFor(t, 30*time.Second, "the warm standby at the changelogs' end", func() bool {
		r := warm.a.group.Load()
		return r != nil && r.Warm && warm.a.statePosition() == active.a.statePosition()
	})
	base, activeBase := agentBase(t, warm), agentBase(t, active)

	// The changelogs' end offsets, read by another client: a caught-up copy stands there.
	client, err := sarama.NewClient(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	changelog := cfgs[0].ApplicationID + "-counts-changelog"
	ends := map[string]int64{}
	for p := range int32(3) {
		end, err := client.GetOffset(changelog, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatal(err)
		}
		ends[strconv.Itoa(int(p))] = end
	}
	checkLags := func(what string, lags any, partitions int) {
		t.Helper()
		m, _ := lags.(map[string]any)
		if len(m) != partitions {
			t.Fatalf("%s: lags %v, want %d partitions", what, lags, partitions)
		}
		for p, l := range m {
			l, _ := l.(map[string]any)
			cur, end, lag := l["currentOffsetPosition"], l["endOffsetPosition"], l["offsetLag"]
			if cur != float64(ends[p]) || end != float64(ends[p]) || lag != float64(0) {
				t.Fatalf("%s: partition %s lag %v, want caught up at the changelog's end %d", what, p, l, ends[p])
			}
		}
	}

	for k := range keys {
		key := fmt.Sprintf("k%d", k)
		if st, o := getJSON(t, base+"/v1/stores/counts/keys/"+key); st != http.StatusServiceUnavailable || o["code"] != "standby" ||
			!strings.Contains(fmt.Sprint(o["error"]), "staleStores=true") {
			t.Fatalf("%s without stale stores: %d %v, want 503 standby suggesting them", key, st, o)
		}
		_, want := getJSON(t, activeBase+"/v1/stores/counts/keys/"+key)
		st, o := getJSON(t, base+"/v1/stores/counts/keys/"+key+"?staleStores=true")
		if st != http.StatusOK || o["value"] != want["value"] || o["value"] != float64(5) || o["partition"] != want["partition"] {
			t.Fatalf("stale read of %s: %d %v, want the active's %v", key, st, o, want)
		}
		checkLags("stale read of "+key, o["lags"], 1)
	}
	st, o := getJSON(t, base+"/v1/stores/counts/keys?staleStores=true")
	if items, _ := o["items"].([]any); st != http.StatusOK || len(items) != keys {
		t.Fatalf("stale range: %d %v", st, o)
	}
	checkLags("stale range", o["lags"], 3)
	st, o = getJSON(t, base+"/v1/stores/counts/count?staleStores=true")
	if st != http.StatusOK || o["count"] != float64(keys) {
		t.Fatalf("stale count: %d %v", st, o)
	}
	checkLags("stale count", o["lags"], 3)

	// IQv2: "staleStores": true in the body; each partition's result has its lag.
	resp, err := http.Post(base+"/v2/query", "application/json", strings.NewReader(`{"store":"counts","query":{"type":"KeyQuery","key":"k1"},"staleStores":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var v2 struct {
		PartitionResults []map[string]any `json:"partitionResults"`
	}
	err = json.NewDecoder(resp.Body).Decode(&v2)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(v2.PartitionResults) != 3 {
		t.Fatalf("stale IQv2: %d %v %v", resp.StatusCode, v2, err)
	}
	found := 0
	for _, r := range v2.PartitionResults {
		if r["success"] != true {
			t.Fatalf("stale IQv2 partition: %v", r)
		}
		if r["result"] == float64(5) {
			found++
		}
		checkLags("stale IQv2", map[string]any{fmt.Sprint(r["partition"]): r["lag"]}, 1)
	}
	if found != 1 {
		t.Fatalf("stale IQv2 found k1 in %d partitions: %v", found, v2)
	}

	// Key metadata on either agent: the active's host, and the warm standby's.
	for _, b := range []string{base, activeBase} {
		st, o := getJSON(t, b+"/v1/metadata/counts/k1")
		if st != http.StatusOK || o["activeHost"] != cfgs[0].ApplicationServer || fmt.Sprint(o["standbyHosts"]) != "["+cfgs[1].ApplicationServer+"]" {
			t.Fatalf("metadata at %s: %d %v, want active %s and standby %s", b, st, o, cfgs[0].ApplicationServer, cfgs[1].ApplicationServer)
		}
	}

	// A third agent is a cold standby (num.standby.replicas = 1): it keeps no copy.
	cold := startAgentUntil(t, cfgs[2], metrics.New(), StateStandby)
	defer cold.stop(t)
	pollFor(t, 30*time.Second, "the third agent cold", func() bool {
		r := cold.a.group.Load()
		return r != nil && !r.Warm && len(r.StandbyHosts) == 1
	})
	if st, o := getJSON(t, agentBase(t, cold)+"/v1/stores/counts/keys/k1?staleStores=true"); st != http.StatusServiceUnavailable ||
		o["code"] != "standby" || !strings.Contains(fmt.Sprint(o["error"]), "this standby is cold") {
		t.Fatalf("stale read of a cold standby: %d %v, want 503 standby saying it is cold", st, o)
	}
}

// Without an application.server the active cannot be named as a host: a standby's metadata
// query says so instead of naming itself, and /readyz names the active by instance only.
func TestStandbyMetadataWithoutActiveHost(t *testing.T) {
	brokers := testBroker(t, 1, "in", "out")
	cfgs := replicaConfigs(t, brokers, countScript, 2, "")
	for _, c := range cfgs {
		c.ApplicationServer = ""
	}
	active := startAgentUntil(t, cfgs[0], metrics.New(), StateRunning)
	defer active.stop(t)
	standby := startAgentUntil(t, cfgs[1], metrics.New(), StateStandby)
	defer standby.stop(t)
	st, o := getJSON(t, agentBase(t, standby)+"/v1/metadata/counts/k1")
	if st != http.StatusServiceUnavailable || o["code"] != "not_available" || !strings.Contains(fmt.Sprint(o["error"]), cfgs[0].GroupInstanceID) {
		t.Fatalf("standby metadata: %d %v, want 503 not_available naming %s", st, o, cfgs[0].GroupInstanceID)
	}
	if _, body := readyzOf(t, standby); body["active"] != cfgs[0].GroupInstanceID || body["activeHost"] != nil {
		t.Fatalf("standby /readyz: %v", body)
	}
	if st, o := getJSON(t, agentBase(t, active)+"/v1/metadata/counts/k1"); st != http.StatusOK || o["activeHost"] == "" {
		t.Fatalf("active metadata: %d %v", st, o)
	}
}

// A standby runs no punctuation, so its global tables do not follow their topics: taking
// over, it reads them to the end before it joins the first record, as at start-up.
func TestTakeoverReadsTheGlobalTablesFirst(t *testing.T) {
	takeoverReadsTheGlobalTablesFirst(t, onKfake(t, 1, "orders", "products", "out"))
}

func takeoverReadsTheGlobalTablesFirst(t *testing.T, b *brokerUnderTest) {
	brokers, products := b.brokers, b.topic(t, "products")
	sendKV(t, brokers, products, 0, "p1", "A")
	cfgs := b.replicaConfigs(t, globalJoinScript, 2, "heartbeat.interval.ms = 500")
	for _, c := range cfgs {
		c.LeaveGroupOnClose = true
	}
	m := metrics.New()
	active := startAgentUntil(t, cfgs[0], m, StateRunning)
	standby := startAgentUntil(t, cfgs[1], metrics.New(), StateStandby)
	defer standby.stop(t)
	sendKV(t, brokers, products, 0, "p1", "C")
	pollFor(t, 30*time.Second, "the active's global table updated", func() bool {
		return testutil.ToFloat64(m.RecordsProcessed.WithLabelValues(globalProc)) == 2
	})
	if err := active.stop(t); err != nil {
		t.Fatal(err)
	}
	sendKV(t, brokers, b.topic(t, "orders"), 0, "o1", "p1")
	got := readAll(t, brokers, b.topic(t, "out"), 1)
	if v := string(got[0].Value); v != "o1:p1=C" {
		t.Fatalf("the new active joined o1 with %q, want o1:p1=C (the global table as its topic ends)", v)
	}
}

// A standby whose broker is down retries at doubling waits and says so once per wait, and
// says when following works again; the pace starts over after that.
func TestStandbyFollowingBacksOffWhileFailing(t *testing.T) {
	var logs bytes.Buffer
	a := &Agent{log: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	outcomes := []bool{false, false, false, false, true, false, true}
	rounds := 0
	a.paceFollowing(ctx, followPace{every: time.Millisecond, max: 4 * time.Millisecond}, func(context.Context) error {
		ok := outcomes[rounds]
		rounds++
		if rounds == len(outcomes) {
			cancel()
		}
		if ok {
			return nil
		}
		return errors.New("broker down")
	})
	if rounds != len(outcomes) {
		t.Fatalf("%d rounds, want %d", rounds, len(outcomes))
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if _, rest, ok := strings.Cut(line, `"retry in"=`); ok {
			got = append(got, "retry "+rest)
		} else if strings.Contains(line, "following the changelogs again") {
			got = append(got, "again")
		}
	}
	want := []string{"retry 1ms", "retry 2ms", "retry 4ms", "retry 4ms", "again", "retry 1ms"}
	if !slices.Equal(got, want) {
		t.Errorf("log said %q, want %q:\n%s", got, want, logs.String())
	}
}
