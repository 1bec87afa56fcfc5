//go:build kafka

package kafkaio_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
	"github.com/stoatflow/stoatflow/test/kafka/kstreamstest"
)

// declarationCases are the topologies whose declaration is compared with Kafka Streams':
// their topics, and, for a topology StoatFlow does not run as Kafka Streams does yet, how it
// differs (the test then checks that the broker refuses the mix, so that the mark goes once
// it is fixed).
var declarationCases = []struct {
	name    string
	topics  []string
	differs string
}{
	{name: "wordcount", topics: []string{"in", "out"}},
	{name: "table_groupby_count", topics: []string{"in", "out"}},
	{name: "windowed", topics: []string{"in", "out"}},
	{name: "session", topics: []string{"in", "out"}},
	{name: "stream_table_join", topics: []string{"in", "table", "out"}},
	{name: "rekey_join", topics: []string{"in", "other", "out"}},
	{name: "global_table", topics: []string{"in", "table", "out"}},
	{name: "fk_join", topics: []string{"in", "table", "out"}},
}

// TestKafkaStreamsTopologyMatchesKafkaStreams: for each topology, Kafka Streams 4.4 joins a
// streams group and declares it; a StoatFlow member then joins the same group with its
// declaration of the Lua twin. The broker compares a joining member's topology with the
// group's field by field (topics, partition counts, replication factors, topic configs,
// co-partition groups, their order) and refuses any difference ("Topology updates are not
// supported yet"): being let in is the proof. The topology the broker stored for a group of
// StoatFlow alone is also the same as Kafka Streams'.
func TestKafkaStreamsTopologyMatchesKafkaStreams(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 1})
	for _, tc := range declarationCases {
		t.Run(tc.name, func(t *testing.T) {
			a := newApp(t, c, 4, tc.topics...)
			ks := kstreamstest.Start(t, kstreamstest.Options{Topology: tc.name, Topics: a.topics, Props: map[string]string{
				"bootstrap.servers": c.BootstrapServers(), "application.id": a.id,
			}})
			ks.WaitLine(t, time.Minute, "RUNNING", func(l string) bool { return l == "STATE RUNNING" })
			var theirs string
			waitFor(t, time.Minute, "the topology Kafka Streams declared, configured", func() (bool, string) {
				theirs = storedTopology(c.DescribeStreamsGroup(t, a.id))
				return theirs != "", "none"
			})
			t.Logf("Kafka Streams' topology as the broker keeps it:\n%s", theirs)

			// StoatFlow alone in a group of its own: the broker keeps the same topology.
			ours := kafkatest.Name(t, "ours")
			topo, _ := twinTopology(t, tc.name, ours, a.topics)
			alone := join(t, memberConfig(t, c, ours, topo))
			// Tasks come once the broker made the internal topics: the topology is configured.
			reconcileUntil(t, alone, time.Minute, "StoatFlow's tasks", func(a kafkaio.Assignment) bool { return len(a.Active) > 0 })
			stored := storedTopology(c.DescribeStreamsGroup(t, ours))
			if tc.differs == "" && stored != theirs {
				t.Errorf("the broker keeps another topology for StoatFlow's declaration:\n--- Kafka Streams\n%s--- StoatFlow\n%s", theirs, stored)
			}
			if tc.differs != "" {
				t.Logf("StoatFlow's topology as the broker keeps it (differs: %s):\n%s", tc.differs, stored)
			}

			// StoatFlow joining Kafka Streams' group.
			topo, _ = twinTopology(t, tc.name, a.id, a.topics)
			m := join(t, memberConfig(t, c, a.id, topo))
			waitFor(t, time.Minute, "the broker's answer to StoatFlow's join", func() (bool, string) {
				return m.Err() != nil || m.Epoch() > 0, m.State()
			})
			switch err := m.Err(); {
			case tc.differs == "" && err != nil:
				t.Fatalf("the broker refused StoatFlow's declaration in Kafka Streams' group: %v", err)
			case tc.differs != "" && err == nil:
				t.Fatalf("the broker let StoatFlow into Kafka Streams' group: the declarations no longer differ (%s): remove the mark", tc.differs)
			case tc.differs != "" && !errors.Is(err, kafkaio.ErrTopologyMismatch):
				t.Fatalf("want %v, got %v", kafkaio.ErrTopologyMismatch, err)
			case tc.differs != "":
				t.Logf("refused as expected: %v", err)
			}
			ks.Close(t, true)
			if strings.Contains(ks.Log(), "ERROR") && tc.differs == "" {
				t.Logf("Kafka Streams logged errors; see its log if the test fails")
			}
		})
	}
}
