//go:build kafka && !race

// Standby tasks of a streams group on Apache Kafka 4.4 (processes killed with SIGKILL;
// without the race detector, as the other process tests: IBM/sarama#2913).

package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// TestKafkaStreamsGroupStandbyTasksReplayOnlyTheTail: two agents share an exactly-once word
// count in a streams group whose streams.num.standby.replicas is 1. Each keeps standby
// tasks of the other's counts partitions caught up from the changelog (their lag is 0 in
// stoatflow_standby_lag_records) and answers stale reads of them with their lag. One is
// killed with SIGKILL while input flows: the survivor takes its tasks and replays only the
// tail of their changelog partitions, far less than the same run without standby tasks
// replays, and the read_committed output counts every word exactly once.
func TestKafkaStreamsGroupStandbyTasksReplayOnlyTheTail(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes; not in -short")
	}
	replayed := map[int]float64{}
	for _, standbys := range []int{1, 0} {
		t.Run(fmt.Sprintf("standbys=%d", standbys), func(t *testing.T) {
			replayed[standbys] = standbyTakeover(t, standbys)
		})
	}
	if t.Failed() {
		return
	}
	t.Logf("changelog records the survivor replayed to take over: %.0f with a standby task, %.0f without", replayed[1], replayed[0])
	if replayed[1] >= replayed[0]/4 {
		t.Fatalf("with standby tasks the takeover replayed %.0f changelog records, without %.0f: want a tail, under a quarter", replayed[1], replayed[0])
	}
}

// standbyTakeover runs two agents of a word count in a streams group with standbys standby
// replicas, kills one while input flows, and returns how many changelog records the
// survivor replayed from just before the kill to running every task.
func standbyTakeover(t *testing.T, standbys int) float64 {
	o := kafkatest.Options{}
	c := kafkatest.Start(t, o)
	b := onCluster(t, c, 4, "in", "out")
	app := kafkatest.Name(t, "app")
	setStreamsGroupConfig(t, c, app, map[string]string{"streams.session.timeout.ms": "6000", "streams.heartbeat.interval.ms": "500",
		"streams.num.standby.replicas": fmt.Sprint(standbys)})
	var procs []*replicaProcess
	for i := range 2 {
		procs = append(procs, streamsAgent(t, b, app, wordCountScript, fmt.Sprintf("group.instance.id = \"agent-%d\"", i)))
	}
	for _, p := range procs {
		p.start(t)
	}
	const tasks = 8 // two sub-topologies of 4 partitions
	pollFor(t, 2*time.Minute, "both agents RUNNING with the 8 tasks between them", func() bool {
		n0, n1 := procs[0].tasks(), procs[1].tasks()
		return n0 > 0 && n1 > 0 && n0+n1 == tasks && procs[0].state() == "RUNNING" && procs[1].state() == "RUNNING"
	})
	want := produceLinesTo(t, b.brokers, b.topic(t, "in"), 4, 600, 0)
	b.checkExactCounts(t, want)

	// Standby tasks: each agent follows the counts partitions the other runs, caught up.
	copies := func() (n int, behind float64) {
		for _, p := range procs {
			for _, m := range metricFamily(p.addr, "stoatflow_standby_lag_records").GetMetric() {
				n++
				behind += m.GetGauge().GetValue()
			}
		}
		return n, behind
	}
	if standbys > 0 {
		pollFor(t, time.Minute, "each agent's standby tasks caught up, the 4 counts partitions between them", func() bool {
			n, behind := copies()
			return n == 4 && behind == 0 && procs[0].standbyCopies() > 0 && procs[1].standbyCopies() > 0
		})
		checkStaleReads(t, procs, want)
	} else if n, _ := copies(); n != 0 {
		t.Fatalf("%d standby copies without standby tasks", n)
	}

	// Input flows for a few seconds before the kill: what the killed agent wrote to its
	// changelogs meanwhile is what a survivor without standby tasks replays.
	flowing := produceWhile(t, b.brokers, b.topic(t, "in"), 4, 600)
	pollFor(t, time.Minute, "input flowing", func() bool { return flowing.sent() >= 3000 })
	before := metricSum(procs[1].addr, restoredRecords)
	if err := procs[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = procs[0].cmd.Wait()
	killed := time.Now()
	pollFor(t, 2*time.Minute, "the survivor running every task", func() bool { return procs[1].tasks() == tasks })
	took := time.Since(killed)
	replayed := metricSum(procs[1].addr, restoredRecords) - before
	for w, n := range flowing.stop(t) {
		want[w] += n
	}
	t.Logf("standbys %d: the survivor runs every task %v after the kill, having replayed %.0f changelog records", standbys, took.Round(10*time.Millisecond), replayed)
	b.checkExactCounts(t, want)
	if err := procs[1].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := procs[1].cmd.Wait(); err != nil {
		t.Fatalf("agent exit: %v", err)
	}
	return replayed
}

// checkStaleReads reads, for every word, its count at the agent keeping a standby copy of
// its partition (GET /v1/metadata/counts/{word} names it) with staleStores=true, which
// answers from its copy with the copy's lag, and refuses the read without it.
func checkStaleReads(t *testing.T, procs []*replicaProcess, want map[string]int64) {
	t.Helper()
	noFollow := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for w, n := range want {
		var md struct {
			ActiveHost   string
			StandbyHosts []string
		}
		pollFor(t, time.Minute, "the metadata of "+w+" naming a standby", func() bool {
			resp, err := noFollow.Get("http://" + procs[0].addr + "/v1/metadata/counts/" + w)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&md) == nil && len(md.StandbyHosts) == 1 && md.StandbyHosts[0] != md.ActiveHost
		})
		copyAt := md.StandbyHosts[0]
		var item struct {
			Value int64
			Lags  map[string]struct{ OffsetLag int64 }
		}
		pollFor(t, time.Minute, fmt.Sprintf("the stale read of %s at %s counting %d", w, copyAt, n), func() bool {
			resp, err := noFollow.Get("http://" + copyAt + "/v1/stores/counts/keys/" + w + "?staleStores=true")
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&item) == nil && item.Value == n
		})
		if len(item.Lags) != 1 {
			t.Fatalf("stale read of %s at %s: lags %v, want its partition's", w, copyAt, item.Lags)
		}
		resp, err := noFollow.Get("http://" + copyAt + "/v1/stores/counts/keys/" + w)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTemporaryRedirect {
			t.Fatalf("read of %s at %s, which keeps a standby copy, without staleStores: %d, want 307 to %s", w, copyAt, resp.StatusCode, md.ActiveHost)
		}
	}
}

// standbyCopies is how many store partitions the process keeps standby copies of.
func (p *replicaProcess) standbyCopies() int {
	return len(metricFamily(p.addr, "stoatflow_standby_lag_records").GetMetric())
}

// metricFamily is a family of the process's /metrics, nil while it does not answer or has
// none.
func metricFamily(addr, name string) *dto.MetricFamily {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil
	}
	return fams[name]
}

// flow is input produced in the background until stopped.
type flow struct {
	done  chan struct{}
	count chan int
	out   chan flowResult
}

type flowResult struct {
	words map[string]int64
	err   error
}

// produceWhile produces lines as produceLinesTo does, from line from on, 20 every 50 ms,
// until stop.
func produceWhile(t *testing.T, brokers []string, topic string, partitions int32, from int) *flow {
	t.Helper()
	prod, err := sarama.NewSyncProducer(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	f := &flow{done: make(chan struct{}), count: make(chan int, 1), out: make(chan flowResult, 1)}
	f.count <- 0
	go func() {
		defer prod.Close()
		words := map[string]int64{}
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := from; ; {
			select {
			case <-f.done:
				f.out <- flowResult{words: words}
				return
			case <-tick.C:
			}
			var msgs []*sarama.ProducerMessage
			for range 20 {
				line := fmt.Sprintf("a%d b%d c%d", i%7, i%11, i%13)
				for _, w := range strings.Fields(line) {
					words[w]++
				}
				msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: int32(i) % partitions, Value: sarama.StringEncoder(line)})
				i++
			}
			if err := prod.SendMessages(msgs); err != nil {
				f.out <- flowResult{err: err}
				return
			}
			f.count <- <-f.count + len(msgs)
		}
	}()
	return f
}

func (f *flow) sent() int {
	n := <-f.count
	f.count <- n
	return n
}

// stop ends the flow and returns how often each word was produced.
func (f *flow) stop(t *testing.T) map[string]int64 {
	t.Helper()
	close(f.done)
	r := <-f.out
	if r.err != nil {
		t.Fatalf("producing the input: %v", r.err)
	}
	return r.words
}
