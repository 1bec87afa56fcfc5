//go:build kafka && !race

// Static membership in a streams group on Apache Kafka 4.4 (agent processes; without the
// race detector, as the other process tests: IBM/sarama#2913).

package agent

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// TestKafkaStreamsGroupStaticMemberKeepsItsTasks: an agent whose config sets
// group.instance.id is a static member of its streams group, as a Kafka Streams 4.4 instance
// with the id is: stopped (SIGTERM, leave.group.on.close unset) it leaves for now, the broker
// keeps its tasks for it, and restarted it runs them again, long before the group's session
// timeout. An agent with the default id (<application.id>-<hostname>) is dynamic: stopped, it
// leaves, and its tasks move at once. The output stays exact throughout.
func TestKafkaStreamsGroupStaticMemberKeepsItsTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agent processes; not in -short")
	}
	o := kafkatest.Options{}
	c := kafkatest.Start(t, o)
	b := onCluster(t, c, 4, "in", "out")
	app := kafkatest.Name(t, "app")
	// A session far longer than the test waits: only static membership gives the tasks back
	// to the restarted agent in time, only a leave moves the dynamic agent's at once.
	const session = 45 * time.Second // the broker's default, and below its group.streams.max.session.timeout.ms
	setStreamsGroupConfig(t, c, app, map[string]string{
		"streams.session.timeout.ms": fmt.Sprint(session.Milliseconds()), "streams.heartbeat.interval.ms": "500"})
	static := streamsAgent(t, b, app, wordCountScript, `group.instance.id = "static-agent"`)
	dynamic := streamsAgent(t, b, app, wordCountScript, "")
	static.start(t)
	dynamic.start(t)
	const tasks = 8 // two sub-topologies of 4 partitions
	sharing := func() bool {
		n0, n1 := static.tasks(), dynamic.tasks()
		return n0 > 0 && n1 > 0 && n0+n1 == tasks && static.state() == "RUNNING" && dynamic.state() == "RUNNING"
	}
	pollFor(t, 2*time.Minute, "both agents RUNNING with the 8 tasks between them", sharing)
	kept := static.tasks()
	instances := func() map[string]int {
		g := c.DescribeStreamsGroup(t, app)
		m := map[string]int{}
		for _, mb := range g.Members {
			id := "dynamic"
			if mb.InstanceID != nil {
				id = *mb.InstanceID
			}
			m[id] += len(mb.Assignment.ActiveTasks)
		}
		return m
	}
	if got := instances(); len(got) != 2 || got["static-agent"] == 0 || got["dynamic"] == 0 {
		t.Fatalf("members by group.instance.id (with their sub-topologies of active tasks): %v, want static-agent and one dynamic member", got)
	}
	want := produceLinesTo(t, b.brokers, b.topic(t, "in"), 4, 400, 0)
	b.checkExactCounts(t, want)

	stop := func(p *replicaProcess) {
		t.Helper()
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("agent exit: %v", err)
		}
	}
	stop(static)
	stopped := time.Now()
	// The static member left for now: the broker keeps it, and its tasks, in the group.
	if got := instances(); got["static-agent"] == 0 {
		t.Fatalf("members after the static agent stopped: %v, want static-agent kept with its tasks", got)
	}
	more := produceLinesTo(t, b.brokers, b.topic(t, "in"), 4, 400, 400)
	for w, n := range more {
		want[w] += n
	}
	static.start(t)
	pollFor(t, time.Minute, "the restarted static agent running its tasks again", func() bool {
		return static.tasks() == kept && static.state() == "RUNNING"
	})
	if took := time.Since(stopped); took >= session {
		t.Fatalf("the static agent's tasks came back after %v, not before the session timeout %v", took, session)
	}
	t.Logf("the static agent ran its %d tasks again %v after it stopped", kept, time.Since(stopped).Round(10*time.Millisecond))
	b.checkExactCounts(t, want)

	stop(dynamic)
	left := time.Now()
	pollFor(t, time.Minute, "the static agent running every task once the dynamic one left", func() bool { return static.tasks() == tasks })
	t.Logf("the dynamic agent's tasks moved %v after it stopped", time.Since(left).Round(10*time.Millisecond))
	more = produceLinesTo(t, b.brokers, b.topic(t, "in"), 4, 400, 800)
	for w, n := range more {
		want[w] += n
	}
	b.checkExactCounts(t, want)
	stop(static)
}
