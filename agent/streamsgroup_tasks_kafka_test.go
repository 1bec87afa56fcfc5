//go:build kafka && !race

// What an agent of a streams group on Apache Kafka 4.4 restores when its tasks change, and
// the identity it keeps (processes; without the race detector, as the other process tests:
// IBM/sarama#2913).

package agent

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// TestKafkaStreamsGroupRestoresOnlyItsTasks: two agents share an exactly-once word count
// while input flows; a third joins and the broker gives it tasks of theirs. The two keep
// tasks they ran: their catch-up at the change replays the store partitions of their own
// tasks only, which they wrote themselves, and not what the other wrote to its partitions
// meanwhile (Kafka Streams restores only the stores of the tasks it is given). The output
// stays exact.
func TestKafkaStreamsGroupRestoresOnlyItsTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agent processes; not in -short")
	}
	c := kafkatest.Start(t, kafkatest.Options{})
	b := onCluster(t, c, 4, "in", "out")
	app := kafkatest.Name(t, "app")
	setStreamsGroupConfig(t, c, app, map[string]string{"streams.session.timeout.ms": "6000", "streams.heartbeat.interval.ms": "500"})
	var procs []*replicaProcess
	for i := range 3 {
		procs = append(procs, streamsAgent(t, b, app, wordCountScript, fmt.Sprintf("group.instance.id = \"agent-%d\"", i)))
	}
	const tasks = 8 // two sub-topologies of 4 partitions
	sharing := func(ps []*replicaProcess) func() bool {
		return func() bool {
			n := 0
			for _, p := range ps {
				if p.tasks() <= 0 || p.state() != "RUNNING" {
					return false
				}
				n += p.tasks()
			}
			return n == tasks
		}
	}
	procs[0].start(t)
	procs[1].start(t)
	pollFor(t, time.Minute, "two agents RUNNING with the 8 tasks between them", sharing(procs[:2]))
	want := produceLinesTo(t, b.brokers, b.topic(t, "in"), 4, 200, 0)
	b.checkExactCounts(t, want)

	// Each line's three words are three changelog records (no record cache), about half of
	// them written by each agent.
	flowing := produceWhile(t, b.brokers, b.topic(t, "in"), 4, 200)
	pollFor(t, time.Minute, "input flowing", func() bool { return flowing.sent() >= 2000 })
	written := 3 * float64(flowing.sent())
	before := []float64{metricSum(procs[0].addr, restoredRecords), metricSum(procs[1].addr, restoredRecords)}
	procs[2].start(t)
	pollFor(t, time.Minute, "three agents RUNNING with the 8 tasks between them", sharing(procs))
	for w, n := range flowing.stop(t) {
		want[w] += n
	}
	b.checkExactCounts(t, want)
	for i, p := range procs[:2] {
		replayed := metricSum(p.addr, restoredRecords) - before[i]
		t.Logf("agent-%d (%d tasks now) replayed %.0f changelog records as the third agent joined (%.0f written in the flow before)", i, p.tasks(), replayed, written)
		if replayed > written/10 {
			t.Errorf("agent-%d replayed %.0f changelog records when the third agent joined, of %.0f the two wrote meanwhile: want only its own tasks' store partitions, which it wrote itself", i, replayed, written)
		}
	}
	t.Logf("the joining agent restored %.0f changelog records", metricSum(procs[2].addr, restoredRecords))
	for _, p := range procs {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("agent exit: %v", err)
		}
	}
}

// TestKafkaStreamsGroupAgentsOnOneHost: two agents on one host, each with its own state
// directory and neither with a group.instance.id (both default to
// <application.id>-<hostname>), share an exactly-once word count in a streams group. Their
// transactional ids come from their process ids, so neither fences the other: the output
// is exact, no epoch fails and neither logs a fenced producer. An agent stopped and started
// again joins with the process id it kept in its state directory.
func TestKafkaStreamsGroupAgentsOnOneHost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agent processes; not in -short")
	}
	c := kafkatest.Start(t, kafkatest.Options{})
	b := onCluster(t, c, 4, "in", "out")
	app := kafkatest.Name(t, "app")
	setStreamsGroupConfig(t, c, app, map[string]string{"streams.heartbeat.interval.ms": "500"})
	var procs []*replicaProcess
	logs := []*lockedBuffer{{}, {}}
	for i := range 2 {
		p := streamsAgent(t, b, app, wordCountScript, "")
		p.stderr = logs[i]
		procs = append(procs, p)
		p.start(t)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, l := range logs {
				t.Logf("agent-%d's log:\n%s", i, l.String())
			}
		}
	})
	const tasks = 8 // two sub-topologies of 4 partitions
	sharing := func() bool {
		n0, n1 := procs[0].tasks(), procs[1].tasks()
		return n0 > 0 && n1 > 0 && n0+n1 == tasks && procs[0].state() == "RUNNING" && procs[1].state() == "RUNNING"
	}
	pollFor(t, time.Minute, "both agents RUNNING with the 8 tasks between them", sharing)
	want := produceLinesTo(t, b.brokers, b.topic(t, "in"), 4, 600, 0)
	b.checkExactCounts(t, want)
	quiet := func() {
		t.Helper()
		for i, p := range procs {
			if n := metricSum(p.addr, failedCommits); n != 0 {
				t.Errorf("agent-%d dropped %.0f epochs", i, n)
			}
			if strings.Contains(logs[i].String(), "the producer was fenced") {
				t.Errorf("agent-%d's producer was fenced", i)
			}
		}
	}
	quiet()
	first := processIDs(t, c, app, procs)
	if first[0] == first[1] {
		t.Fatalf("both agents joined with process id %s", first[0])
	}

	if err := procs[0].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := procs[0].cmd.Wait(); err != nil {
		t.Fatalf("agent exit: %v", err)
	}
	procs[0].start(t)
	pollFor(t, time.Minute, "both agents RUNNING with the 8 tasks between them after agent-0 restarted", sharing)
	more := produceLinesTo(t, b.brokers, b.topic(t, "in"), 4, 600, 600)
	for w, n := range more {
		want[w] += n
	}
	b.checkExactCounts(t, want)
	quiet()
	if again := processIDs(t, c, app, procs); again != first {
		t.Fatalf("process ids %v after agent-0 restarted, want %v: it keeps its id", again, first)
	}
	t.Logf("process ids %v kept across the restart", first)
	for _, p := range procs {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("agent exit: %v", err)
		}
	}
}

// processIDs are the process ids the members of app's streams group with the agents'
// application.server joined with (StreamsGroupDescribe).
func processIDs(t *testing.T, c *kafkatest.Cluster, app string, procs []*replicaProcess) [2]string {
	t.Helper()
	var ids [2]string
	for _, m := range c.DescribeStreamsGroup(t, app).Members {
		if m.UserEndpoint == nil {
			continue
		}
		for i, p := range procs {
			if fmt.Sprintf("%s:%d", m.UserEndpoint.Host, m.UserEndpoint.Port) == p.addr {
				ids[i] = m.ProcessID
			}
		}
	}
	if ids[0] == "" || ids[1] == "" {
		t.Fatalf("StreamsGroupDescribe names the agents' process ids %v", ids)
	}
	return ids
}
