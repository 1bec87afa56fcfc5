//go:build kafka && !race

package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
	"github.com/stoatflow/stoatflow/test/kafka/kstreamstest"
)

// mixedLeftJoinScript is the Lua twin of kstreamstest's "left_join" topology: its outer-join
// buffer (KSTREAM-OUTERSHARED-0000000004-store) is a store StoatFlow lays out its own way.
const mixedLeftJoinScript = `
local s = require("stoat")
local b = s.builder()
local l = b:stream("in")
local r = b:stream("other")
l:leftJoin(r, function(lv, rv) return lv .. "+" .. tostring(rv) end, s.JoinWindows.ofTimeDifferenceAndGrace(5000, 1000)):to("out")
return b
`

// TestKafkaStreamsMixedGroupOwnLayoutStore: an application with a store StoatFlow lays out
// its own way (a leftJoin's outer-join buffer) in a group of an agent and Kafka Streams 4.4
// (docs/scaling.md, "Mixed groups"). The broker takes the group (the topology is the same);
// what each side does with the other's buffer:
//   - Kafka Streams ran the tasks first: the agent, given some of them, stops at once with
//     the error naming the store (exit status 1) before it processes anything, and Kafka
//     Streams runs every task again;
//   - the agent ran them first: Kafka Streams, given some of them, fails on the agent's
//     buffer records (Kafka's ListSerde cannot read them) and stops in ERROR, and the agent
//     runs every task again.
func TestKafkaStreamsMixedGroupOwnLayoutStore(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes; not in -short")
	}
	const store = "KSTREAM-OUTERSHARED-0000000004-store"
	const allTasks = "TASKS active=0_0,0_1,0_2,0_3 standby="
	c := kafkatest.Start(t, kafkatest.Options{})
	start := func(t *testing.T) (b *brokerUnderTest, app string, ks kstreamstest.Options) {
		b = onCluster(t, c, 4, "in", "other", "out")
		app = kafkatest.Name(t, "app")
		setStreamsGroupConfig(t, c, app, map[string]string{"streams.session.timeout.ms": "6000", "streams.heartbeat.interval.ms": "500"})
		topics := map[string]string{"in": b.topic(t, "in"), "other": b.topic(t, "other"), "out": b.topic(t, "out")}
		return b, app, kstreamstest.Options{Topology: "left_join", Topics: topics, Props: mixedStreamsProps(b, app)}
	}
	// leftRecords writes left records without partners, at ts.
	leftRecords := func(t *testing.T, b *brokerUnderTest, ts time.Time) {
		t.Helper()
		prod, err := sarama.NewSyncProducer(b.brokers, saramaTestConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		var msgs []*sarama.ProducerMessage
		for i := range 200 {
			key := fmt.Sprintf("k%d", i%40)
			msgs = append(msgs, &sarama.ProducerMessage{Topic: b.topic(t, "in"), Partition: pipeline.DefaultPartition([]byte(key), 4),
				Key: sarama.StringEncoder(key), Value: sarama.StringEncoder(fmt.Sprintf("v%d", i)), Timestamp: ts})
		}
		if err := prod.SendMessages(msgs); err != nil {
			t.Fatal(err)
		}
	}
	// bufferLeftRecords writes left records without partners and waits until the buffer's
	// changelog holds some, committed.
	bufferLeftRecords := func(t *testing.T, b *brokerUnderTest, app string) {
		t.Helper()
		leftRecords(t, b, time.Now())
		select {
		case <-consumeAll(t, b.brokers, pipeline.ChangelogTopic(app, store), readCommittedConfig()):
		case <-time.After(time.Minute):
			t.Fatalf("nothing committed to the changelog of %s within a minute", store)
		}
	}

	t.Run("KafkaStreamsFirst", func(t *testing.T) {
		b, app, opts := start(t)
		ks := kstreamstest.Start(t, opts)
		ks.WaitLine(t, 2*time.Minute, "every task", func(l string) bool { return l == allTasks })
		bufferLeftRecords(t, b, app)
		logs := &lockedBuffer{}
		agent := startMixedAgent(t, b, app, mixedLeftJoinScript, logs)
		exited := make(chan error, 1)
		go func() { exited <- agent.cmd.Wait() }()
		select {
		case err := <-exited:
			want := "store " + store + " cannot be taken over from Kafka Streams"
			if err == nil || agent.cmd.ProcessState.ExitCode() != 1 || !strings.Contains(logs.String(), want) {
				t.Fatalf("agent exit: %v, log:\n%s\nwant exit status 1 and %q", err, logs.String(), want)
			}
		case <-time.After(2 * time.Minute):
			t.Fatalf("the agent still runs, log:\n%s", logs.String())
		}
		t.Logf("the agent stopped: %s", strings.TrimSpace(logs.String()))
		ks.WaitLine(t, 2*time.Minute, "every task after the agent stopped", func(l string) bool { return l == allTasks })
		ks.Close(t, true)
	})

	t.Run("AgentFirst", func(t *testing.T) {
		b, app, opts := start(t)
		agent := startMixedAgent(t, b, app, mixedLeftJoinScript, nil)
		pollFor(t, 2*time.Minute, "the agent running every task", func() bool { return agent.tasks() == 4 && agent.state() == "RUNNING" })
		bufferLeftRecords(t, b, app)
		ks := kstreamstest.Start(t, opts)
		ks.WaitLine(t, 2*time.Minute, "some tasks", func(l string) bool {
			return strings.HasPrefix(l, "TASKS active=") && !strings.HasPrefix(l, "TASKS active= ")
		})
		// Kafka Streams restores the buffer as bytes; the next records read it (their
		// windows close the buffered records').
		leftRecords(t, b, time.Now().Add(30*time.Second))
		failed := ks.WaitLine(t, 2*time.Minute, "Kafka Streams failing", func(l string) bool { return strings.HasPrefix(l, "ERROR ") })
		const want = "SerializationException: Data is encoded as constant size entries, but configured inner deserializer is not a known fixed-size deserializer"
		// The ERROR line comes on stdout; the exception's trace on the log (stderr) may
		// follow it a little later.
		for deadline := time.Now().Add(time.Minute); !strings.Contains(ks.Log(), want) && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		if !strings.Contains(ks.Log(), want) {
			t.Fatalf("Kafka Streams failed (%s) without %q:\n%s", failed, want, grepLogLines(ks.Log(), "Exception"))
		}
		t.Logf("Kafka Streams failed: %s (%s)", failed, want)
		pollFor(t, 2*time.Minute, "the agent running every task again", func() bool { return agent.tasks() == 4 })
	})
}
