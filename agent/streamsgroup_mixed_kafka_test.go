//go:build kafka && !race

// A streams group shared by an agent process and a Kafka Streams 4.4 JVM application running
// the same topology (issue 31 item 6), both killed with SIGKILL in turn (without the race
// detector, as the other process tests: IBM/sarama#2913).

package agent

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
	"github.com/stoatflow/stoatflow/test/kafka/kstreamstest"
)

// mixedWordCountScript is the Lua twin of kstreamstest's "wordcount" topology: the same
// operations in the same order (so the same generated names, repartition and changelog
// topics), the same split into words, String keys and values, a Long count out.
const mixedWordCountScript = `
local s = require("stoat")
local b = s.builder()
b:stream("in")
  :flatMapValues(function(v) local t = {} for w in v:lower():gmatch("[a-z]+") do t[#t + 1] = w end return t end)
  :groupBy(function(_, w) return w end)
  :count()
  :toStream()
  :to("out", {valueSerde = "long"})
return b
`

// TestKafkaStreamsMixedGroupExactOutput: an agent process and a Kafka Streams 4.4 application
// run the same exactly-once word count (a repartition and a count) in one streams group. The
// broker splits the tasks between them and the read_committed output counts every word
// exactly once. While input flows, Kafka Streams is killed with SIGKILL: once the broker drops
// it, the agent runs every task (restoring the counts Kafka Streams wrote to the changelog,
// reading the repartition topic from the offsets it committed) and the output stays exact. A
// new Kafka Streams instance takes some tasks back, exactly; then the agent is killed with
// SIGKILL while input flows: Kafka Streams runs every task from what the agent committed, and
// the output stays exact. Every count of every word comes out once, none twice or skipped.
func TestKafkaStreamsMixedGroupExactOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes; not in -short")
	}
	g := startMixedGroup(t, "wordcount", mixedWordCountScript)
	in := newWordFeed(t, g.b.brokers, g.b.topic(t, "in"), mixedPartitions)
	in.lines(600)
	g.b.checkExactCounts(t, in.counts())

	// Kafka Streams is killed while input flows: the agent takes its tasks.
	in.flow()
	g.killStreams()
	in.stop()
	in.lines(300)
	g.b.checkExactCounts(t, in.counts())

	// A new Kafka Streams instance joins while input flows: the tasks are split again.
	in.flow()
	ks2 := kstreamstest.Start(t, g.ksOptions)
	g.split("a new Kafka Streams instance and the agent share the tasks", ks2)
	in.stop()
	in.lines(300)
	g.b.checkExactCounts(t, in.counts())

	// The agent is killed while input flows: Kafka Streams takes every task.
	in.flow()
	g.killAgent(ks2)
	in.stop()
	in.lines(300)
	g.b.checkExactCounts(t, in.counts())
	t.Logf("%d lines counted exactly across the mixed group", in.produced())
	g.closeStreams(ks2)
}

// mixedPartitions is the partition count of a mixed group's topics: with two sub-topologies,
// twice as many tasks.
const mixedPartitions = 4

// mixedGroup is a streams group that a Kafka Streams 4.4 instance and an agent process,
// running the same topology of two sub-topologies on the topics in and out, share.
type mixedGroup struct {
	t         *testing.T
	c         *kafkatest.Cluster
	b         *brokerUnderTest
	app       string
	all       []string // every task of the group: "0_0" … "1_3"
	ksOptions kstreamstest.Options
	ks        *kstreamstest.App // the first Kafka Streams instance
	agent     *replicaProcess
}

// startMixedGroup starts Kafka Streams running topology (kstreamstest's name), waits until
// it runs every task, then starts an agent running script, its Lua twin, and waits until the
// two share the tasks.
func startMixedGroup(t *testing.T, topology, script string) *mixedGroup {
	t.Helper()
	c := kafkatest.Start(t, kafkatest.Options{})
	b := onCluster(t, c, mixedPartitions, "in", "out")
	g := &mixedGroup{t: t, c: c, b: b, app: kafkatest.Name(t, "app")}
	// The broker drops a killed member after the group's session timeout (45 s by default).
	setStreamsGroupConfig(t, c, g.app, map[string]string{"streams.session.timeout.ms": "6000", "streams.heartbeat.interval.ms": "500"})
	for sub := range 2 {
		for p := range mixedPartitions {
			g.all = append(g.all, fmt.Sprintf("%d_%d", sub, p))
		}
	}
	g.ksOptions = kstreamstest.Options{Topology: topology, Topics: map[string]string{"in": b.topic(t, "in"), "out": b.topic(t, "out")}, Props: mixedStreamsProps(b, g.app)}
	g.ks = kstreamstest.Start(t, g.ksOptions)
	g.ks.WaitLine(t, 2*time.Minute, "every task", g.runsEveryTask)
	g.agent = startMixedAgent(t, b, g.app, script, nil)
	g.split("the agent and Kafka Streams share the tasks", g.ks)
	return g
}

// runsEveryTask reports whether a Kafka Streams instance's log line says it runs every task.
func (g *mixedGroup) runsEveryTask(line string) bool {
	return line == "TASKS active="+strings.Join(g.all, ",")+" standby="
}

// split waits until the agent and the Kafka Streams instance jvm share every task.
func (g *mixedGroup) split(what string, jvm *kstreamstest.App) {
	g.t.Helper()
	pollFor(g.t, 2*time.Minute, what, func() bool {
		theirs, _ := jvm.Tasks()
		n := g.agent.tasks()
		return n > 0 && len(theirs) > 0 && n+len(theirs) == len(g.all) && g.agent.state() == "RUNNING"
	})
	theirs, _ := jvm.Tasks()
	g.t.Logf("%s: the agent runs %d tasks, Kafka Streams %v", what, g.agent.tasks(), theirs)
	logStreamsGroup(g.t, g.c, g.app)
}

// killStreams kills the first Kafka Streams instance with SIGKILL and waits until the agent
// runs every task.
func (g *mixedGroup) killStreams() {
	g.t.Helper()
	g.ks.Kill()
	killed := time.Now()
	pollFor(g.t, 2*time.Minute, "the agent running every task after Kafka Streams was killed", func() bool { return g.agent.tasks() == len(g.all) })
	g.t.Logf("the agent runs every task %v after Kafka Streams was killed", time.Since(killed).Round(10*time.Millisecond))
	logStreamsGroup(g.t, g.c, g.app)
}

// killAgent kills the agent with SIGKILL and waits until the Kafka Streams instance jvm runs
// every task.
func (g *mixedGroup) killAgent(jvm *kstreamstest.App) {
	g.t.Helper()
	if err := g.agent.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		g.t.Fatal(err)
	}
	_ = g.agent.cmd.Wait()
	killed := time.Now()
	jvm.WaitLine(g.t, 2*time.Minute, "every task after the agent was killed", g.runsEveryTask)
	g.t.Logf("Kafka Streams runs every task %v after the agent was killed", time.Since(killed).Round(10*time.Millisecond))
	logStreamsGroup(g.t, g.c, g.app)
}

// closeStreams fails the test if the Kafka Streams instance jvm logged errors, and closes it.
func (g *mixedGroup) closeStreams(jvm *kstreamstest.App) {
	g.t.Helper()
	if log := jvm.Log(); strings.Contains(log, " ERROR ") {
		g.t.Errorf("Kafka Streams logged errors:\n%s", grepLogLines(log, " ERROR "))
	}
	jvm.Close(g.t, true)
}

// mixedStreamsProps are the Kafka Streams properties of a mixed group's application, as
// startMixedAgent's agent has them.
func mixedStreamsProps(b *brokerUnderTest, app string) map[string]string {
	return map[string]string{
		"bootstrap.servers":          strings.Join(b.brokers, ","),
		"application.id":             app,
		"processing.guarantee":       "exactly_once_v2",
		"commit.interval.ms":         "100",
		"statestore.cache.max.bytes": "0",
		// As the agent's: a killed instance's open transaction is aborted soon.
		"producer.transaction.timeout.ms": "5000",
	}
}

// startMixedAgent starts an agent process running script in the streams group app, its log
// to stderr (nil: the test's).
func startMixedAgent(t *testing.T, b *brokerUnderTest, app, script string, stderr io.Writer) *replicaProcess {
	t.Helper()
	p := streamsAgent(t, b, app, script, `group.instance.id = "agent-0"`)
	p.stderr = stderr
	p.start(t)
	return p
}

// logStreamsGroup logs the members of a streams group and their active tasks, as the broker
// describes them.
func logStreamsGroup(t *testing.T, c *kafkatest.Cluster, group string) {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	resp := c.Request(t, c.GroupCoordinator(t, group), req).(*kmsg.StreamsGroupDescribeResponse)
	for _, g := range resp.Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			t.Fatalf("StreamsGroupDescribe %s: %v", group, err)
		}
		for _, m := range g.Members {
			var active []string
			for _, ts := range m.Assignment.ActiveTasks {
				for _, p := range ts.Partitions {
					active = append(active, fmt.Sprintf("%s_%d", ts.SubtopologyID, p))
				}
			}
			slices.Sort(active)
			t.Logf("  member %s client %s epoch %d active %v", m.MemberID, m.ClientID, m.MemberEpoch, active)
		}
	}
}

func grepLogLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// wordFeed writes lines of three words of letters only (which both engines split alike) to a
// topic, round robin over its partitions, either a batch at a time (lines) or steadily in the
// background (flow, until stop), and counts every word it wrote.
type wordFeed struct {
	t          *testing.T
	prod       sarama.SyncProducer
	topic      string
	partitions int32

	mu    sync.Mutex
	n     int
	words map[string]int64

	quit chan struct{}
	done chan error
}

func newWordFeed(t *testing.T, brokers []string, topic string, partitions int32) *wordFeed {
	t.Helper()
	prod, err := sarama.NewSyncProducer(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prod.Close() })
	f := &wordFeed{t: t, prod: prod, topic: topic, partitions: partitions, words: map[string]int64{}}
	t.Cleanup(func() {
		if f.quit != nil {
			close(f.quit)
			<-f.done
		}
	})
	return f
}

// send writes n lines and counts their words once they are written.
func (f *wordFeed) send(n int) error {
	f.mu.Lock()
	from := f.n
	f.mu.Unlock()
	words := map[string]int64{}
	msgs := make([]*sarama.ProducerMessage, 0, n)
	for i := from; i < from+n; i++ {
		ws := []string{fmt.Sprintf("a%c", 'a'+i%7), fmt.Sprintf("b%c", 'a'+i%11), fmt.Sprintf("c%c", 'a'+i%13)}
		for _, w := range ws {
			words[w]++
		}
		msgs = append(msgs, &sarama.ProducerMessage{Topic: f.topic, Partition: int32(i) % f.partitions, Value: sarama.StringEncoder(strings.Join(ws, " "))})
	}
	if err := f.prod.SendMessages(msgs); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n += n
	for w, k := range words {
		f.words[w] += k
	}
	return nil
}

func (f *wordFeed) lines(n int) {
	f.t.Helper()
	if err := f.send(n); err != nil {
		f.t.Fatal(err)
	}
}

// flow writes 10 lines every 20 ms until stop.
func (f *wordFeed) flow() {
	f.quit, f.done = make(chan struct{}), make(chan error, 1)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-f.quit:
				f.done <- nil
				return
			case <-tick.C:
				if err := f.send(10); err != nil {
					f.done <- err
					return
				}
			}
		}
	}()
}

func (f *wordFeed) stop() {
	f.t.Helper()
	close(f.quit)
	err := <-f.done
	f.quit = nil
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *wordFeed) counts() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.words)
}

func (f *wordFeed) produced() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}
