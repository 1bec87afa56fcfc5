package agent

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/agent/console"
	"github.com/stoatflow/stoatflow/metrics"
)

// wordCountScript counts the words of each line (every update out, no record cache), so
// that most words are counted on another worker than the one that read their line.
const wordCountScript = `
local s = require("stoat")
local b = s.builder()
b:stream("in")
  :flatMapValues(function(v) local t = {} for w in v:gmatch("%S+") do t[#t+1] = w end return t end)
  :groupBy(function(k, v) return v end)
  :count({materialized = "counts"})
  :toStream()
  :to("out", {valueSerde = "long"})
return b
`

// produceLines writes n lines of three words each to "in", round robin over partitions,
// and returns how often each word occurs.
func produceLines(t *testing.T, brokers []string, partitions int32, n, from int) map[string]int64 {
	t.Helper()
	return produceLinesTo(t, brokers, "in", partitions, n, from)
}

// produceLinesTo is produceLines to topic.
func produceLinesTo(t *testing.T, brokers []string, topic string, partitions int32, n, from int) map[string]int64 {
	t.Helper()
	prod, err := sarama.NewSyncProducer(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	words := map[string]int64{}
	var msgs []*sarama.ProducerMessage
	for i := from; i < from+n; i++ {
		line := fmt.Sprintf("a%d b%d c%d", i%7, i%11, i%13)
		for _, w := range []string{fmt.Sprintf("a%d", i%7), fmt.Sprintf("b%d", i%11), fmt.Sprintf("c%d", i%13)} {
			words[w]++
		}
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: int32(i) % partitions, Value: sarama.StringEncoder(line)})
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
	return words
}

func sumLabels(m *metrics.Metrics, vec func(string) float64, n int) float64 {
	var sum float64
	for i := range n {
		sum += vec(strconv.Itoa(i))
	}
	return sum
}

// Two workers whose inboxes hold one re-keyed record each: nearly every line's words fill
// the other worker's inbox, both workers push back on each other all the time, and the
// commit barrier still comes every 50 ms. Every word is counted exactly once, under
// exactly-once, and the tasks are spread evenly.
func TestWorkersFillTheirInboxesWithoutDeadlock(t *testing.T) {
	defer func(c int) { exchangeCapacity = c }(exchangeCapacity)
	exchangeCapacity = 1
	brokers := testBroker(t, 4, "in", "out")
	cfg := testConfig(t, brokers, wordCountScript, `processing.guarantee = "exactly_once_v2"
num.stream.threads = 2
statestore.cache.max.bytes = 0`)
	m := metrics.New()
	ra := startAgentWith(t, cfg, m)
	defer ra.stop(t)
	want := produceLines(t, brokers, 4, 1500, 0)
	checkExactCounts(t, brokers, want)
	blocked := sumLabels(m, func(th string) float64 { return testutil.ToFloat64(m.ThreadBlocked.WithLabelValues(th)) }, 2)
	if blocked == 0 {
		t.Fatal("no worker ever waited for room in the other's inbox")
	}
	for th := range 2 {
		// Two sub-topologies of four tasks each, two of each per worker, created at the
		// first assignment.
		if got := testutil.ToFloat64(m.ThreadTasks.WithLabelValues(strconv.Itoa(th))); got != 4 {
			t.Errorf("worker %d runs %v tasks, want 4", th, got)
		}
		if got := testutil.ToFloat64(m.ThreadTasksCreated.WithLabelValues(strconv.Itoa(th))); got != 4 {
			t.Errorf("worker %d created %v tasks, want 4", th, got)
		}
	}
	for _, task := range []string{"0_0", "0_3", "1_0", "1_3"} {
		if testutil.ToFloat64(m.TaskProcessed.WithLabelValues(task)) == 0 {
			t.Errorf("task %s processed nothing", task)
		}
	}
	if got := testutil.ToFloat64(m.Commits.WithLabelValues(metrics.ResultFailure)); got != 0 {
		t.Fatalf("%v epochs failed", got)
	}
	// GET /v1/status (what `stoatflow top` shows) names each task's worker.
	addr, err := ra.a.HTTPAddr(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var st console.Status
	if err := json.Unmarshal([]byte(httpGet(t, "http://"+addr+"/v1/status")), &st); err != nil {
		t.Fatal(err)
	}
	threads := map[int]int{}
	for id, task := range st.Tasks {
		threads[task.Thread]++
		if task.Processed == 0 || task.StreamTime < 0 {
			t.Errorf("task %s: %+v", id, task)
		}
	}
	if len(st.Tasks) != 8 || threads[0] != 4 || threads[1] != 4 {
		t.Errorf("status tasks %v: %d per thread", st.Tasks, threads)
	}
}

// A reload changes the number of workers at a commit barrier: the tasks spread over the
// new workers, and every record is processed exactly once across the change.
func TestReloadChangesTheWorkers(t *testing.T) {
	brokers := testBroker(t, 4, "in", "out")
	extra := "processing.guarantee = \"exactly_once_v2\"\ncommit.interval.ms = 50\nstatestore.cache.max.bytes = 0\n"
	f := startReloadable(t, brokers, wordCountScript, "num.stream.threads = 1\n"+extra)
	defer f.stop(t)
	want := produceLines(t, brokers, 4, 300, 0)
	total := func(more map[string]int64) {
		for w, n := range more {
			want[w] += n
		}
	}
	for round, threads := range []int{3, 2} {
		f.writeConfig(t, strings.Replace(f.toml, "num.stream.threads = 1\n", fmt.Sprintf("num.stream.threads = %d\n", threads), 1))
		produced := make(chan map[string]int64)
		go func() { produced <- produceLines(t, brokers, 4, 300, 300*(2*round+1)) }()
		if code := f.postReload(t); code != http.StatusAccepted {
			t.Fatalf("POST /-/reload: %d, want 202", code)
		}
		f.waitReloads(t, metrics.ResultSuccess, float64(round+1))
		total(<-produced)
		total(produceLines(t, brokers, 4, 300, 300*(2*round+2)))
		deadline := time.Now().Add(30 * time.Second)
		for th := range threads {
			for testutil.ToFloat64(f.m.ThreadTasks.WithLabelValues(strconv.Itoa(th))) == 0 {
				if time.Now().After(deadline) {
					t.Fatalf("round %d: worker %d of %d runs no task", round, th, threads)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		sum := sumLabels(f.m, func(th string) float64 { return testutil.ToFloat64(f.m.ThreadTasks.WithLabelValues(th)) }, threads)
		if sum != 8 {
			t.Fatalf("round %d: the workers run %v tasks, want 8", round, sum)
		}
	}
	checkExactCounts(t, brokers, want)
}

// A Lua processor's close runs when its task closes: here when the agent stops.
func TestLuaProcessorsCloseWithTheirTasks(t *testing.T) {
	brokers := testBroker(t, 2, "in", "out")
	cfg := testConfig(t, brokers, `
local s = require("stoat")
local b = s.builder()
b:stream("in"):process(function()
  return {
    process = function(ctx, k, v) ctx:forward(k, v) end,
    close = function(ctx) print("closing task " .. ctx:taskId()) end,
  }
end):to("out")
return b
`, "")
	ra := startAgent(t, cfg)
	produce(t, brokers, "in", 0, 3, nil, 0)
	produce(t, brokers, "in", 1, 3, nil, 3)
	readAll(t, brokers, "out", 6)
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}
	logs := ra.logs.String()
	for _, task := range []string{"0_0", "0_1"} {
		if strings.Count(logs, "closing task "+task) != 1 {
			t.Errorf("task %s closed %d times; logs:\n%s", task, strings.Count(logs, "closing task "+task), logs)
		}
	}
}

// A rebalance that changes the application's tasks moves tasks between the workers at its
// commit barrier, without a restart: a topic that the source pattern matches gives
// sub-topology 0 a second task, and the even spread (Kafka Streams' assignor's) then moves
// counting task 1_2 from worker 1 to worker 0, where its counts go on from the state it
// committed on worker 1, each exactly once.
func TestRebalanceMovesATaskBetweenWorkers(t *testing.T) {
	rebalanceMovesATaskBetweenWorkers(t, onKfake(t, 3, "in", "out", "copies"))
}

func rebalanceMovesATaskBetweenWorkers(t *testing.T, b *brokerUnderTest) {
	more := b.name(t, "more")
	moreA, moreB := more+"-a", more+"-b"
	b.create(t, moreA, 1, nil)
	cfg := b.config(t, fmt.Sprintf(`
local s = require("stoat")
local b = s.builder()
b:stream({pattern = %q}):to("copies")
b:stream("in"):groupByKey():count({materialized = "counts"}):toStream():to("out", {valueSerde = "long"})
return b
`, regexp.QuoteMeta(more)+"-.*"), `processing.guarantee = "exactly_once_v2"
num.stream.threads = 2
metadata.max.age.ms = 100
statestore.cache.max.bytes = 0`)
	m := metrics.New()
	ra := startAgentWith(t, cfg, m)
	defer func() {
		if err := ra.stop(t); err != nil {
			t.Error(err)
		}
	}()
	addr, err := ra.a.HTTPAddr(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	threads := func() map[string]int {
		var st console.Status
		if err := json.Unmarshal([]byte(httpGet(t, "http://"+addr+"/v1/status")), &st); err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for id, task := range st.Tasks {
			out[id] = task.Thread
		}
		return out
	}
	const keys = 9
	b.produceKeys(t, 300, keys, 0, "v")
	b.checkExactCounts(t, wantCounts(300, keys))
	if got, want := threads(), map[string]int{"0_0": 0, "1_0": 1, "1_1": 0, "1_2": 1}; !maps.Equal(got, want) {
		t.Fatalf("tasks on workers %v, want %v", got, want)
	}
	if testutil.ToFloat64(m.TaskProcessed.WithLabelValues("1_2")) == 0 {
		t.Fatal("task 1_2 counted nothing before it moves")
	}

	b.create(t, moreB, 2, nil)
	sendKV(t, b.brokers, moreB, 1, "k", "b1")
	readUntil(t, b.brokers, b.topic(t, "copies"), hasValue("b1"))
	pollFor(t, 30*time.Second, "worker 1 closing the task that moves", func() bool {
		return testutil.ToFloat64(m.ThreadTasksClosed.WithLabelValues("1")) == 1
	})
	if got, want := threads(), map[string]int{"0_0": 0, "0_1": 1, "1_0": 1, "1_1": 0, "1_2": 0}; !maps.Equal(got, want) {
		t.Fatalf("tasks on workers after the rebalance %v, want %v", got, want)
	}
	for th, want := range []float64{3, 3} {
		if got := testutil.ToFloat64(m.ThreadTasksCreated.WithLabelValues(strconv.Itoa(th))); got != want {
			t.Errorf("worker %d created %v tasks, want %v", th, got, want)
		}
	}
	if got := testutil.ToFloat64(m.ThreadTasksClosed.WithLabelValues("0")); got != 0 {
		t.Errorf("worker 0 closed %v tasks, want 0", got)
	}
	b.produceKeys(t, 300, keys, 300, "v")
	b.checkExactCounts(t, wantCounts(600, keys))
}
