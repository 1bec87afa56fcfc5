//go:build kafka && !race

// Agents of a streams group on the 3-node Apache Kafka 4.4 cluster killed with SIGKILL and
// started again over and over while input flows, and an application scaled from one agent
// to three and back (issue 31, item 8). They run without the race detector, as the other
// process tests (faults_test.go says why).

package agent

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

const (
	// groupPartitions of the input and output: 12 tasks (two sub-topologies), some on each
	// of three agents. outputReader.ended counts faultPartitions end markers.
	groupPartitions = faultPartitions
	groupTasks      = 2 * groupPartitions
	// groupLineRate is the input's lines per second, three words each: steady, so that a
	// task that stops producing shows, and light enough for a 2-core machine running three
	// brokers and three agents.
	groupLineRate = 60
	// groupWordsPerPartition: each input partition has words of its own, so that a count
	// read from the output tells which source task read its line.
	groupWordsPerPartition = 10
	// groupRecovery bounds each wait for the group: a hang, not a slow takeover, exceeds it.
	groupRecovery = 2 * time.Minute
)

// streamsKillCycles is how many agents TestKafkaStreamsGroupKillCycles kills:
// STOATFLOW_KAFKA_STREAMS_KILLS (make soak), else 5.
func streamsKillCycles() int {
	if n, err := strconv.Atoi(os.Getenv("STOATFLOW_KAFKA_STREAMS_KILLS")); err == nil && n > 0 {
		return n
	}
	return 5
}

// TestKafkaStreamsGroupKillCycles: three agent processes share an exactly-once word count
// (a repartition and a count, 12 tasks) in a streams group on the 3-node cluster while a
// steady input flows. Again and again one of them, at random, is killed with SIGKILL: the
// broker gives its tasks to the other two, which produce again; then it is started again
// and takes its share back. Each kill logs how long the killed agent's tasks took to be
// reassigned and to produce again, and how many changelog records the takeover replayed.
// At the end every word's counts 1..n are in the output exactly once, read_committed by a
// client independent of the agents'.
func TestKafkaStreamsGroupKillCycles(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes; not in -short")
	}
	g := newStreamsGroupRig(t, 3)
	for _, a := range g.agents {
		a.start(t)
	}
	g.feed = startLineFeeder(t, g.c, g.b.topic(t, "in"))
	var reassigned, producing []time.Duration
	var replayed, restarted, cycles []float64
	for cycle := range streamsKillCycles() {
		g.waitShared(g.agents)
		g.waitFlowing(time.Now())
		victim := g.agents[rand.IntN(len(g.agents))]
		tasks := g.activeTasks(victim)
		var survivors []*groupAgent
		for _, a := range g.agents {
			if a != victim {
				survivors = append(survivors, a)
			}
		}
		replayedBefore, failedBefore := g.metric(survivors, restoredRecords), g.metric(survivors, failedCommits)
		killed := victim.kill(t)
		var took time.Duration
		g.until(groupRecovery, "the survivors running every task", func() bool {
			if g.taskSum(survivors) != groupTasks {
				return false
			}
			took = time.Since(killed)
			return true
		})
		var last time.Duration
		for _, task := range tasks {
			var at time.Time
			g.until(groupRecovery, fmt.Sprintf("output of task %s of input written after the kill", task), func() bool {
				var ok bool
				at, ok = g.read.taskProduced(task, killed)
				return ok
			})
			last = max(last, at.Sub(killed))
		}
		replay, failed := g.metric(survivors, restoredRecords)-replayedBefore, g.metric(survivors, failedCommits)-failedBefore
		reassigned, producing, replayed = append(reassigned, took), append(producing, last), append(replayed, replay)
		victim.start(t)
		g.waitShared(g.agents)
		restarted = append(restarted, g.metric([]*groupAgent{victim}, restoredRecords))
		// The whole cycle: the survivors' takeover and their change of tasks as the restarted
		// agent takes its share back, and the restarted agent's restores.
		cycles = append(cycles, g.metric(survivors, restoredRecords)-replayedBefore+restarted[len(restarted)-1])
		t.Logf("cycle %d: killed %s (tasks %v); reassigned after %v, producing again after %v; the takeover replayed %.0f changelog records (the survivors dropped %.0f epochs), the restarted agent %.0f, the three over the cycle %.0f",
			cycle+1, victim.name, tasks, took.Round(10*time.Millisecond), last.Round(10*time.Millisecond), replay, failed, restarted[len(restarted)-1], cycles[len(cycles)-1])
	}
	t.Logf("over %d kills: reassigned after %s, producing again after %s; changelog records replayed by the takeover %s, by the restarted agent %s, by the three over each cycle %s",
		len(reassigned), durationRange(reassigned), durationRange(producing), countRange(replayed), countRange(restarted), countRange(cycles))
	g.finish(g.agents)
}

// TestKafkaStreamsGroupScales1To3To1: one agent runs every task of an exactly-once word
// count while the input flows; two more join and the broker spreads the tasks over the
// three; the two stop (SIGTERM, leaving the group) and the first runs every task again. The
// output is exact throughout, read_committed by an independent client.
func TestKafkaStreamsGroupScales1To3To1(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agent processes; not in -short")
	}
	g := newStreamsGroupRig(t, 3)
	first, others := g.agents[0], g.agents[1:]
	first.start(t)
	g.waitShared(g.agents[:1])
	g.feed = startLineFeeder(t, g.c, g.b.topic(t, "in"))
	g.waitFlowing(time.Now())
	up := time.Now()
	for _, a := range others {
		a.start(t)
	}
	g.waitShared(g.agents)
	g.waitFlowing(time.Now())
	t.Logf("scaled up: the three agents share the tasks %v after the two started (%d, %d, %d)",
		time.Since(up).Round(10*time.Millisecond), first.tasks(), others[0].tasks(), others[1].tasks())
	down := time.Now()
	for _, a := range others {
		a.stop(t)
	}
	g.waitShared(g.agents[:1])
	g.waitFlowing(time.Now())
	t.Logf("scaled down: the first agent runs every task %v after the two stopped", time.Since(down).Round(10*time.Millisecond))
	g.finish(g.agents[:1])
}

// TestKafkaStreamsGroupCommitsOnlyTheOffsetsOfItsTasks: an agent that gave tasks to
// another commits the offsets of its own tasks' partitions only. It ran every task of a
// word count alone, then a second agent took half of them and read on in their partitions;
// after the first agent's next commit, the group's committed offset of every input
// partition is still where the agent reading it got to. Committing again the offsets it had
// reached in the partitions it gave up would set the group back: the next agent to take
// those tasks would count their records again (TestKafkaStreamsGroupKillCycles found it).
func TestKafkaStreamsGroupCommitsOnlyTheOffsetsOfItsTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agent processes; not in -short")
	}
	g := newStreamsGroupRig(t, 2)
	first, second := g.agents[0], g.agents[1]
	in := g.b.topic(t, "in")
	first.start(t)
	g.waitShared(g.agents[:1])
	want := produceLinesTo(t, g.b.brokers, in, groupPartitions, 120, 0)
	if !g.read.await(groupRecovery, want) {
		t.Fatal("the first agent does not count")
	}
	second.start(t)
	g.waitShared(g.agents)
	more := produceLinesTo(t, g.b.brokers, in, groupPartitions, 120, 120)
	for w, n := range more {
		want[w] += n
	}
	if !g.read.await(groupRecovery, want) {
		t.Fatal("the agents do not count")
	}
	// One line that the first agent's tasks alone process: read from an input partition of
	// its, its words counted in a partition of its. The second agent, idle, commits nothing
	// after it.
	source, count := -1, -1
	for _, task := range g.activeTasks(first) {
		var sub, p int
		if _, err := fmt.Sscanf(task, "%d_%d", &sub, &p); err != nil {
			t.Fatal(err)
		}
		if sub == 0 {
			source = p
		} else {
			count = p
		}
	}
	if source < 0 || count < 0 {
		t.Fatalf("the first agent runs tasks of one sub-topology only: %v", g.activeTasks(first))
	}
	var words []string
	for i := 0; len(words) < 3; i++ {
		if w := fmt.Sprintf("z%d", i); pipeline.DefaultPartition([]byte(w), groupPartitions) == int32(count) {
			words = append(words, w)
			want[w]++
		}
	}
	cl := g.c.Client(t, kgo.DefaultProduceTopic(in), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Value: []byte(strings.Join(words, " ")), Partition: int32(source)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if !g.read.await(groupRecovery, want) {
		t.Fatal("the first agent does not count the last line")
	}
	// The output is read_committed: the transaction that committed the line's offset has
	// ended. Its markers may still be on their way to the group's offsets.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		committed, end := g.committedOffsets(cl, in), g.endOffsets(cl, in)
		var behind []string
		for p := range int32(groupPartitions) {
			if committed[p] != end[p] {
				behind = append(behind, fmt.Sprintf("partition %d committed at %d, its end %d", p, committed[p], end[p]))
			}
		}
		if len(behind) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the group's committed offsets of the input are behind (the first agent runs %v): %s",
				g.activeTasks(first), strings.Join(behind, "; "))
		}
	}
	for _, a := range g.agents {
		a.stop(t)
	}
	g.read.check(t, want)
}

// committedOffsets are the group's committed offsets of topic's partitions (-1: none).
func (g *streamsGroupRig) committedOffsets(cl *kgo.Client, topic string) map[int32]int64 {
	g.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = g.app
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	for p := range int32(groupPartitions) {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(g.t.Context(), cl)
	if err != nil {
		g.t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		g.t.Fatalf("committed offsets of %s: %v", g.app, err)
	}
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.Offset
		}
	}
	return out
}

// endOffsets are the ends of topic's partitions.
func (g *streamsGroupRig) endOffsets(cl *kgo.Client, topic string) map[int32]int64 {
	g.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range int32(groupPartitions) {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(g.t.Context(), cl)
	if err != nil {
		g.t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				g.t.Fatalf("end of %s-%d: %v", topic, p.Partition, err)
			}
			out[p.Partition] = p.Offset
		}
	}
	return out
}

// streamsGroupRig is a word count's streams group on the 3-node cluster: its agents
// (started by the test), the feeder of its input and the independent reader of its output.
type streamsGroupRig struct {
	t      *testing.T
	c      *kafkatest.Cluster
	b      *brokerUnderTest
	app    string
	agents []*groupAgent
	feed   *lineFeeder
	read   *taskOutputReader
}

func newStreamsGroupRig(t *testing.T, agents int) *streamsGroupRig {
	t.Helper()
	o := kafkatest.Options{Nodes: 3}
	c := kafkatest.Start(t, o)
	g := &streamsGroupRig{t: t, c: c, b: onCluster(t, c, groupPartitions, "in", "out"), app: kafkatest.Name(t, "app")}
	// The broker drops a killed member after the group's session timeout (45 s by default).
	setStreamsGroupConfig(t, g.c, g.app, map[string]string{"streams.session.timeout.ms": "6000", "streams.heartbeat.interval.ms": "500"})
	for i := range agents {
		a := &groupAgent{name: fmt.Sprintf("agent-%d", i), logs: &lockedBuffer{}}
		// transaction.timeout.ms (5 s) below the session: a killed agent's open transaction is
		// aborted by the time its tasks move.
		a.p = streamsAgent(t, g.b, g.app, wordCountScript, fmt.Sprintf("group.instance.id = %q", a.name))
		a.p.stderr = a.logs
		g.agents = append(g.agents, a)
	}
	g.read = startTaskOutputReader(t, g.c, g.b.topic(t, "out"))
	t.Cleanup(func() {
		for _, a := range g.agents {
			if a.running() {
				_ = a.p.cmd.Process.Kill()
				<-a.exited
			}
			if t.Failed() {
				t.Logf("%s's log:\n%s", a.name, a.logs.String())
			}
		}
	})
	return g
}

// groupAgent is one agent process of the group, started again after it is killed.
type groupAgent struct {
	name   string
	p      *replicaProcess
	logs   *lockedBuffer
	exited chan error // the exit of the process started last
}

func (a *groupAgent) start(t *testing.T) {
	t.Helper()
	a.p.start(t)
	a.exited = make(chan error, 1)
	go func(cmd interface{ Wait() error }) { a.exited <- cmd.Wait() }(a.p.cmd)
}

func (a *groupAgent) running() bool { return a.exited != nil && a.p.cmd.ProcessState == nil }

// kill kills the agent with SIGKILL and returns when.
func (a *groupAgent) kill(t *testing.T) time.Time {
	t.Helper()
	if err := a.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	<-a.exited
	a.exited = nil
	return at
}

// stop stops the agent with SIGTERM and fails unless it exits cleanly.
func (a *groupAgent) stop(t *testing.T) {
	t.Helper()
	if err := a.p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-a.exited:
		a.exited = nil
		if err != nil {
			t.Fatalf("%s exit: %v", a.name, err)
		}
	case <-time.After(groupRecovery):
		t.Fatalf("%s did not stop within %v of SIGTERM", a.name, groupRecovery)
	}
}

func (a *groupAgent) tasks() int { return a.p.tasks() }

func (a *groupAgent) metric(prefix string) float64 { return metricSum(a.p.addr, prefix) }

// metricSum is the sum of the series, at the agent listening on addr, of a metric whose
// line starts with prefix (stoatflow_state_records_restored_total{ for every store's), 0
// while it does not answer.
func metricSum(addr, prefix string) float64 {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// until polls cond until it holds and returns when it did, failing the test after within
// or when an agent that should run exits.
func (g *streamsGroupRig) until(within time.Duration, what string, cond func() bool) time.Time {
	g.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		for _, a := range g.agents {
			if a.exited == nil {
				continue
			}
			select {
			case err := <-a.exited:
				a.exited <- err
				g.t.Fatalf("%s exited (%v) while waiting for %s", a.name, err, what)
			default:
			}
		}
		if time.Now().After(deadline) {
			g.dumpAgents()
			g.t.Fatalf("after %v: %s (tasks: %s)", within, what, g.taskCounts())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Now()
}

// dumpAgents has the running agents write their goroutines' stacks to their logs (SIGQUIT)
// and exit, so that a stuck agent shows where it waits.
func (g *streamsGroupRig) dumpAgents() {
	for _, a := range g.agents {
		if a.running() && a.p.cmd.Process.Signal(syscall.SIGQUIT) == nil {
			select {
			case err := <-a.exited:
				a.exited <- err
			case <-time.After(10 * time.Second):
			}
		}
	}
}

func (g *streamsGroupRig) taskCounts() string {
	var parts []string
	for _, a := range g.agents {
		parts = append(parts, fmt.Sprintf("%s %d", a.name, a.tasks()))
	}
	return strings.Join(parts, ", ")
}

// taskSum is how many tasks agents run together.
func (g *streamsGroupRig) taskSum(agents []*groupAgent) int {
	n := 0
	for _, a := range agents {
		n += max(a.tasks(), 0)
	}
	return n
}

// waitShared waits until agents are RUNNING, each with some of the tasks, and together with
// all of them.
func (g *streamsGroupRig) waitShared(agents []*groupAgent) {
	g.t.Helper()
	g.until(groupRecovery, fmt.Sprintf("%d agents RUNNING with the %d tasks between them", len(agents), groupTasks), func() bool {
		for _, a := range agents {
			if a.tasks() <= 0 || a.p.state() != "RUNNING" {
				return false
			}
		}
		return g.taskSum(agents) == groupTasks
	})
}

// waitFlowing waits until the output of input written at since or later has been read.
func (g *streamsGroupRig) waitFlowing(since time.Time) {
	g.t.Helper()
	g.until(groupRecovery, fmt.Sprintf("output of input written after %s", since.Format("15:04:05.000")), func() bool {
		_, ok := g.read.flowing(since)
		return ok
	})
}

// metric is the sum of the agents' series of a metric whose line starts with prefix.
func (g *streamsGroupRig) metric(agents []*groupAgent, prefix string) float64 {
	var sum float64
	for _, a := range agents {
		sum += a.metric(prefix)
	}
	return sum
}

const (
	// restoredRecords are the changelog records an agent replayed since it started.
	restoredRecords = "stoatflow_state_records_restored_total{"
	// failedCommits are the epochs an agent dropped since it started.
	failedCommits = `stoatflow_commit_commits_total{result="failure"}`
)

// activeTasks are the active tasks the broker gave agent ("0_3": sub-topology 0, partition
// 3), as the group's StreamsGroupDescribe names them (its member with the agent's
// application.server).
func (g *streamsGroupRig) activeTasks(a *groupAgent) []string {
	g.t.Helper()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{g.app}
	resp := g.c.Request(g.t, g.c.GroupCoordinator(g.t, g.app), req).(*kmsg.StreamsGroupDescribeResponse)
	var tasks []string
	for _, grp := range resp.Groups {
		for _, m := range grp.Members {
			if m.UserEndpoint == nil || fmt.Sprintf("%s:%d", m.UserEndpoint.Host, m.UserEndpoint.Port) != a.p.addr {
				continue
			}
			for _, ts := range m.Assignment.ActiveTasks {
				for _, p := range ts.Partitions {
					tasks = append(tasks, fmt.Sprintf("%s_%d", ts.SubtopologyID, p))
				}
			}
		}
	}
	if len(tasks) == 0 {
		g.t.Fatalf("the group's description gives %s no task", a.name)
	}
	slices.Sort(tasks)
	return tasks
}

// finish stops the input, waits for its last count, stops agents (SIGTERM) and checks the
// output: every count exactly once, and nothing after (no transaction left open).
func (g *streamsGroupRig) finish(agents []*groupAgent) {
	g.t.Helper()
	want := g.feed.finish(g.t)
	if !g.read.await(groupRecovery, want) {
		g.dumpAgents()
		g.read.check(g.t, want) // says what is wrong when a count is missing or repeated
		g.t.Fatalf("no count for %v: the agents do not process (tasks: %s)", groupRecovery, g.taskCounts())
	}
	for _, a := range agents {
		a.stop(g.t)
	}
	// A record after the agents' last one in every partition: read_committed returns it
	// once every transaction before it has ended, and with it everything they wrote.
	cl := g.c.Client(g.t, kgo.DefaultProduceTopic(g.b.topic(g.t, "out")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(groupPartitions) {
		if err := cl.ProduceSync(g.t.Context(), &kgo.Record{Key: []byte(endKey), Partition: p}).FirstErr(); err != nil {
			g.t.Fatal(err)
		}
	}
	g.until(groupRecovery, "the end of every output partition (a transaction left open?)", g.read.ended)
	if d := g.read.doubles(); len(d) > 0 {
		g.t.Errorf("%d counts of input lines counted more than once, e.g.:\n%s", len(d), strings.Join(d[:min(len(d), 20)], "\n"))
	}
	g.read.check(g.t, want)
	var total int64
	for _, n := range want {
		total += n
	}
	g.t.Logf("%d lines, %d counts: 0 lost, 0 duplicated", g.feed.sent, total)
}

// lineFeeder writes the input at groupLineRate: line i to partition i mod groupPartitions,
// three distinct words of that partition's ("p2w7"), each line stamped with the time it is
// produced and its number in header lineHeader (the counts carry it: a line counted twice
// shows).
// Its client is idempotent with unlimited retries (franz-go's defaults), so every line is
// written once.
type lineFeeder struct {
	cl     *kgo.Client
	sent   int              // written by the feeding goroutine; read once it is done
	words  map[string]int64 // how often each word was written, as sent
	stop   chan struct{}
	done   chan struct{}
	failed atomic.Pointer[error]
}

func startLineFeeder(t *testing.T, c *kafkatest.Cluster, topic string) *lineFeeder {
	f := &lineFeeder{words: map[string]int64{}, stop: make(chan struct{}), done: make(chan struct{})}
	f.cl = c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxBufferedRecords(1<<20))
	go func() {
		defer close(f.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-f.stop:
				return
			case <-tick.C:
			}
			for range groupLineRate / 20 {
				p, n := f.sent%groupPartitions, f.sent/groupPartitions
				var line []string
				for _, j := range []int{n, n + 3, n + 6} {
					w := fmt.Sprintf("p%dw%d", p, j%groupWordsPerPartition)
					line = append(line, w)
					f.words[w]++
				}
				rec := &kgo.Record{Value: []byte(strings.Join(line, " ")), Partition: int32(p), Timestamp: time.Now(),
					Headers: []kgo.RecordHeader{{Key: lineHeader, Value: strconv.AppendInt(nil, int64(f.sent), 10)}}}
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

// lineHeader is the header with an input line's number.
const lineHeader = "line"

// finish stops feeding and returns how often each word was written.
func (f *lineFeeder) finish(t *testing.T) map[string]int64 {
	t.Helper()
	close(f.stop)
	<-f.done
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := f.cl.Flush(ctx); err != nil {
		t.Fatalf("flushing the input: %v", err)
	}
	if e := f.failed.Load(); e != nil {
		t.Fatalf("an input line was not written: %v", *e)
	}
	return f.words
}

// taskOutputReader is an outputReader (read_committed, franz-go, from the start) that also
// keeps, for each task, the first time it read a count the task produced of an input line
// written at a given time or later: a count of word "p2w7" in output partition 4 was
// produced by task 0_2 (which read its line from input partition 2) and task 1_4 (which
// counted it: the repartition topic and the output are partitioned alike).
type taskOutputReader struct {
	*outputReader
	counts []taskCount // guarded by outputReader.mu
}

// taskCount is one count read.
type taskCount struct {
	at        time.Time // when the poll returned
	written   time.Time // when its input line was written
	partition int32
	offset    int64
	source    int // the input partition of its word
	key       string
	count     int64
	line      string // the number of the input line counted
	// producer and producerEpoch name the transactional producer that wrote it: the agent
	// (its transactional.id) and its process.
	producer      int64
	producerEpoch int16
}

func startTaskOutputReader(t *testing.T, c *kafkatest.Cluster, topic string) *taskOutputReader {
	o := &taskOutputReader{outputReader: &outputReader{seen: map[string]map[int64]int{}, ends: map[int32]bool{}}}
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(250*time.Millisecond))
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
				k := string(rec.Key)
				if k == endKey {
					o.ends[rec.Partition] = true
					return
				}
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
				source := -1
				if _, err := fmt.Sscanf(k, "p%d", &source); err != nil {
					source = -1
				}
				var line string
				for _, h := range rec.Headers {
					if h.Key == lineHeader {
						line = string(h.Value)
					}
				}
				o.counts = append(o.counts, taskCount{at: now, written: rec.Timestamp, partition: rec.Partition, offset: rec.Offset,
					source: source, key: k, count: n, line: line, producer: rec.ProducerID, producerEpoch: rec.ProducerEpoch})
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

// taskProduced reports whether a count task ("0_2", "1_4") produced of input written at
// since or later has been read, and when the first was.
func (o *taskOutputReader) taskProduced(task string, since time.Time) (time.Time, bool) {
	var sub, p int
	if _, err := fmt.Sscanf(task, "%d_%d", &sub, &p); err != nil {
		return time.Time{}, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range o.counts {
		if c.written.Before(since) {
			continue
		}
		if sub == 0 && c.source == p || sub == 1 && int(c.partition) == p {
			return c.at, true
		}
	}
	return time.Time{}, false
}

// doubles describes the input lines (of a lineFeeder) counted more than once for a word:
// each count of such a line with where and when it was read, and which producer wrote it.
func (o *taskOutputReader) doubles() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	byLine := map[string][]taskCount{}
	var order []string
	for _, c := range o.counts {
		if c.line == "" {
			continue // not a lineFeeder's line
		}
		k := c.key + " line " + c.line
		if len(byLine[k]) == 0 {
			order = append(order, k)
		}
		byLine[k] = append(byLine[k], c)
	}
	var out []string
	for _, k := range order {
		cs := byLine[k]
		if len(cs) < 2 {
			continue
		}
		var parts []string
		for _, c := range cs {
			parts = append(parts, fmt.Sprintf("count %d at out-%d@%d read %s, producer %d epoch %d", c.count, c.partition, c.offset, c.at.Format("15:04:05.000"), c.producer, c.producerEpoch))
		}
		out = append(out, fmt.Sprintf("%s (written %s): %s", k, cs[0].written.Format("15:04:05.000"), strings.Join(parts, ", ")))
	}
	return out
}

// durationRange is "min–max (median m)" of ds.
func durationRange(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }
	return fmt.Sprintf("%v–%v (median %v)", r(s[0]), r(s[len(s)-1]), r(s[len(s)/2]))
}

// countRange is "min–max (median m)" of ns.
func countRange(ns []float64) string {
	s := slices.Clone(ns)
	slices.Sort(s)
	return fmt.Sprintf("%.0f–%.0f (median %.0f)", s[0], s[len(s)-1], s[len(s)/2])
}
