//go:build kafka

package kafkaio_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
	"github.com/stoatflow/stoatflow/test/kafka/kstreamstest"
)

// TestKafkaStreamsMixedGroup: a Kafka Streams 4.4 application and a StoatFlow member of the
// same topology share one streams group (issue 31 item 6, docs/scaling.md): the broker takes
// both, splits the tasks between them, gives a killed Kafka Streams instance's tasks to
// StoatFlow when its session expires, splits again when a new instance comes, and gives
// everything to Kafka Streams when StoatFlow leaves. (The member runs no records: what it is
// given is checked, not the output.)
func TestKafkaStreamsMixedGroup(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 1})
	a := newApp(t, c, 4, "in", "out")
	fastGroup(t, c, a.id, nil)
	props := map[string]string{"bootstrap.servers": c.BootstrapServers(), "application.id": a.id}
	ks := kstreamstest.Start(t, kstreamstest.Options{Topology: "wordcount", Topics: a.topics, Props: props})
	ks.WaitLine(t, time.Minute, "every task", func(l string) bool {
		return l == "TASKS active="+strings.Join(allTasks(2, 4), ",")+" standby="
	})

	topo, _ := twinTopology(t, "wordcount", a.id, a.topics)
	m := join(t, memberConfig(t, c, a.id, topo))
	split := func(what string, jvm *kstreamstest.App) {
		t.Helper()
		waitFor(t, 2*time.Minute, what, func() (bool, string) {
			if err := m.Err(); err != nil {
				t.Fatalf("StoatFlow's member: %v", err)
			}
			if r := m.Pending(); r != nil {
				m.Reconciled(r)
			}
			ours := taskNames(m.Assignment().Active)
			theirs, _ := jvm.Tasks()
			union := append(slices.Clone(ours), theirs...)
			slices.Sort(union)
			return len(ours) > 0 && len(theirs) > 0 && slices.Equal(union, allTasks(2, 4)),
				fmt.Sprintf("StoatFlow %v, Kafka Streams %v", ours, theirs)
		})
		ours := taskNames(m.Assignment().Active)
		theirs, _ := jvm.Tasks()
		t.Logf("%s: StoatFlow %v, Kafka Streams %v", what, ours, theirs)
		for _, gm := range c.DescribeStreamsGroup(t, a.id).Members {
			t.Logf("  member %s client %s process %s epoch %d active %v", gm.MemberID, gm.ClientID, gm.ProcessID, gm.MemberEpoch, flatten(gm.Assignment.ActiveTasks))
		}
	}
	split("Kafka Streams and StoatFlow share the tasks", ks)

	// Kafka Streams is killed: when its session expires, StoatFlow has every task.
	ks.Kill()
	reconcileUntil(t, m, 2*time.Minute, "StoatFlow with every task after Kafka Streams died", func(as kafkaio.Assignment) bool {
		return slices.Equal(taskNames(as.Active), allTasks(2, 4))
	})

	// A new Kafka Streams instance joins: the tasks are shared again.
	ks2 := kstreamstest.Start(t, kstreamstest.Options{Topology: "wordcount", Topics: a.topics, Props: props})
	split("a new Kafka Streams instance and StoatFlow share the tasks", ks2)

	// StoatFlow leaves: Kafka Streams has every task.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := m.Close(ctx, kafkaio.LeaveGroup); err != nil {
		t.Fatal(err)
	}
	ks2.WaitLine(t, 2*time.Minute, "every task after StoatFlow left", func(l string) bool {
		return l == "TASKS active="+strings.Join(allTasks(2, 4), ",")+" standby="
	})
	if strings.Contains(ks2.Log(), " ERROR ") {
		t.Errorf("Kafka Streams logged errors:\n%s", grepLines(ks2.Log(), " ERROR "))
	}
	ks2.Close(t, true)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
