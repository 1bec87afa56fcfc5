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

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// TestKafkaStreamsGroupRestoresOnlyItsTasks: two agents share an exactly-once word count;
// then a third joins and the broker gives it tasks of theirs. As Kafka Streams restores
// only the stores of the tasks it is given: the two, keeping tasks they ran, replay at the
// change the store partitions of their own tasks only, which they wrote themselves, not
// what the other wrote to its partitions; the third restores the changelog partitions of
// its own tasks only, not every store partition as it starts. The output stays exact.
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
	// Each line's three words are three changelog records (no record cache), about half of
	// them written by each agent.
	flowing := produceWhile(t, b.brokers, b.topic(t, "in"), 4, 0)
	pollFor(t, time.Minute, "input flowing", func() bool { return flowing.sent() >= 2000 })
	want := flowing.stop(t)
	b.checkExactCounts(t, want)
	var written int64
	for _, n := range want {
		written += n
	}
	changelog := app + "-counts-changelog"
	ends := partitionEnds(t, c, changelog, 4)
	before := []float64{metricSum(procs[0].addr, restoredRecords), metricSum(procs[1].addr, restoredRecords)}

	procs[2].start(t)
	pollFor(t, time.Minute, "three agents RUNNING with the 8 tasks between them", sharing(procs))
	for i, p := range procs[:2] {
		replayed := metricSum(p.addr, restoredRecords) - before[i]
		t.Logf("agent-%d (%d tasks now) replayed %.0f changelog records as the third agent joined (the two wrote %d)", i, p.tasks(), replayed, written)
		if replayed > float64(written)/10 {
			t.Errorf("agent-%d replayed %.0f changelog records when the third agent joined, of %d the two wrote: want only its own tasks' store partitions, which it wrote itself", i, replayed, written)
		}
	}
	// The counts partitions of the third agent's tasks (sub-topology 1) are all it may read.
	var mine []int32
	var own int64
	for _, m := range c.DescribeStreamsGroup(t, app).Members {
		if m.UserEndpoint == nil || fmt.Sprintf("%s:%d", m.UserEndpoint.Host, m.UserEndpoint.Port) != procs[2].addr {
			continue
		}
		for _, ts := range m.Assignment.ActiveTasks {
			if ts.SubtopologyID == "1" {
				mine = append(mine, ts.Partitions...)
			}
		}
	}
	for _, p := range mine {
		own += ends[p]
	}
	restored := metricSum(procs[2].addr, restoredRecords)
	t.Logf("the joining agent restored %.0f changelog records: its counts partitions %v end at %d offsets together, all four at %v", restored, mine, own, ends)
	if restored > float64(own) {
		t.Errorf("the joining agent restored %.0f changelog records, more than its tasks' counts partitions %v hold (%d offsets of %v)", restored, mine, own, ends)
	}
	b.checkExactCounts(t, want)
	for _, p := range procs {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("agent exit: %v", err)
		}
	}
}

// partitionEnds are the end offsets of partitions 0..n-1 of topic.
func partitionEnds(t *testing.T, c *kafkatest.Cluster, topic string, n int32) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range n {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(t.Context(), c.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				t.Fatalf("end of %s-%d: %v", topic, p.Partition, err)
			}
			out[p.Partition] = p.Offset
		}
	}
	return out
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
