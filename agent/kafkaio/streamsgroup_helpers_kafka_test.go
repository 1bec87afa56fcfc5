//go:build kafka

package kafkaio_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// Helpers of the streams group tests on Apache Kafka.

// testLogger keeps a member's log in the test's.
func testLogger(t *testing.T) *slog.Logger {
	if !testing.Verbose() {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// memberConfig is a member of app on c with topo.
func memberConfig(t *testing.T, c *kafkatest.Cluster, app string, topo *kafkaio.StreamsTopology) kafkaio.StreamsMemberConfig {
	sc := sarama.NewConfig()
	sc.ClientID = "stoatflow-test"
	return kafkaio.StreamsMemberConfig{
		Brokers: c.Bootstrap(), Client: sc, Group: app, Topology: topo,
		RebalanceTimeout: 30 * time.Second, RequestTimeout: 10 * time.Second,
		RetryBackoff: 50 * time.Millisecond, RetryBackoffMax: time.Second,
		Logger: testLogger(t),
	}
}

// join starts a member, closed (leaving the group) when the test ends.
func join(t *testing.T, cfg kafkaio.StreamsMemberConfig) *kafkaio.StreamsMember {
	t.Helper()
	m, err := kafkaio.JoinStreamsGroup(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = m.Close(ctx, kafkaio.LeaveGroup)
	})
	return m
}

// app is a topology's twin application: its topics, made with partitions each.
type app struct {
	id     string
	topics map[string]string
}

func newApp(t *testing.T, c *kafkatest.Cluster, partitions int32, names ...string) app {
	a := app{id: kafkatest.Name(t, "app"), topics: map[string]string{}}
	for _, n := range names {
		a.topics[n] = kafkatest.Name(t, n)
		c.CreateTopic(t, a.topics[n], partitions, nil)
	}
	return a
}

// setGroupConfig sets a streams group's configs (streams.session.timeout.ms,
// streams.heartbeat.interval.ms, streams.num.standby.replicas).
func setGroupConfig(t *testing.T, c *kafkatest.Cluster, group string, configs map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range configs {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value, cfg.Op = k, kmsg.StringPtr(v), kmsg.IncrementalAlterConfigOpSet
		r.Configs = append(r.Configs, cfg)
	}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, c.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range resp.Resources {
		if err := kerr.ErrorForCode(res.ErrorCode); err != nil {
			t.Fatalf("group config of %s: %v (%v)", group, err, res.ErrorMessage)
		}
	}
}

// storedTopology is the topology the broker keeps for a group, as text, the application id
// written <app> so that two groups' can be compared; "" while the broker has none
// configured (source topics missing, internal topics not made yet).
func storedTopology(g kmsg.StreamsGroupDescribeResponseGroup) string {
	if g.Topology == nil || g.Topology.Subtopologies == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "epoch %d\n", g.Topology.Epoch)
	for _, s := range g.Topology.Subtopologies {
		fmt.Fprintf(&b, "subtopology %s\n  source %v\n  repartition sinks %v\n", s.SubtopologyID, s.SourceTopics, s.RepartitionSinkTopics)
		for _, r := range s.RepartitionSourceTopics {
			fmt.Fprintf(&b, "  repartition source %s partitions %d replication %d %s\n", r.Topic, r.NumPartitions, r.ReplicationFactor, describedConfigs(r.Configs))
		}
		for _, r := range s.StateChangelogTopics {
			fmt.Fprintf(&b, "  changelog %s partitions %d replication %d %s\n", r.Topic, r.NumPartitions, r.ReplicationFactor, describedConfigs(r.Configs))
		}
	}
	return strings.ReplaceAll(b.String(), g.Group, "<app>")
}

func describedConfigs(cs []kmsg.TopicInfoConfig) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.Key+"="+c.Value)
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v (last: %s)", what, timeout, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reconcile carries out the member's pending reconciliations as an application would (no
// task to commit here) until its tasks satisfy want.
func reconcileUntil(t *testing.T, m *kafkaio.StreamsMember, timeout time.Duration, what string, want func(kafkaio.Assignment) bool) kafkaio.Assignment {
	t.Helper()
	var got kafkaio.Assignment
	waitFor(t, timeout, what, func() (bool, string) {
		if err := m.Err(); err != nil {
			t.Fatalf("member %s failed: %v", m.MemberID(), err)
		}
		if r := m.Pending(); r != nil {
			m.Reconciled(r)
		}
		got = m.Assignment()
		return m.Pending() == nil && want(got), fmt.Sprintf("%s, state %s, statuses %v", got, m.State(), m.Statuses())
	})
	return got
}

func taskNames(ts []kafkaio.TaskID) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.String())
	}
	slices.Sort(out)
	return out
}
