//go:build kafka

package kafkaio_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// The streams group member on Apache Kafka 4.4: joining, sharing tasks, giving them back,
// static membership, fencing, lag and endpoints, and the statuses it stops on.

// fastGroup makes a group's heartbeats and session short, so that the tests wait little.
func fastGroup(t *testing.T, c *kafkatest.Cluster, group string, extra map[string]string) {
	cfg := map[string]string{"streams.heartbeat.interval.ms": "200", "streams.session.timeout.ms": "6000"}
	for k, v := range extra {
		cfg[k] = v
	}
	setGroupConfig(t, c, group, cfg)
}

// allTasks are subtopologies × partitions task names.
func allTasks(subtopologies, partitions int) []string {
	var out []string
	for s := range subtopologies {
		for p := range partitions {
			out = append(out, strconv.Itoa(s)+"_"+strconv.Itoa(p))
		}
	}
	slices.Sort(out)
	return out
}

// shareUntil carries out every member's reconciliations until the members' active tasks
// are disjoint, cover want, and each member has one at least; it returns each member's.
func shareUntil(t *testing.T, members []*kafkaio.StreamsMember, want []string) [][]string {
	t.Helper()
	var got [][]string
	waitFor(t, 2*time.Minute, fmt.Sprintf("%d members sharing %d tasks", len(members), len(want)), func() (bool, string) {
		got = got[:0]
		var union []string
		ok := true
		for _, m := range members {
			if err := m.Err(); err != nil {
				t.Fatalf("member %s: %v", m.MemberID(), err)
			}
			if r := m.Pending(); r != nil {
				m.Reconciled(r)
				ok = false
			}
			active := taskNames(m.Assignment().Active)
			got = append(got, active)
			union = append(union, active...)
			ok = ok && len(active) > 0
		}
		slices.Sort(union)
		return ok && slices.Equal(union, want), fmt.Sprint(got)
	})
	return got
}

func testStreamsGroupSplitsTasks(t *testing.T, nodes int) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: nodes})
	a := newApp(t, c, 4, "in", "out")
	fastGroup(t, c, a.id, map[string]string{"streams.num.standby.replicas": "1"})
	topo, _ := twinTopology(t, "wordcount", a.id, a.topics)
	var members []*kafkaio.StreamsMember
	for range 3 {
		members = append(members, join(t, memberConfig(t, c, a.id, topo)))
	}
	shares := shareUntil(t, members, allTasks(2, 4))
	t.Logf("3 members: %v", shares)

	// Standby tasks: the broker puts a copy of each stateful task (sub-topology 1 has the
	// count's store) on another member than its active one.
	waitFor(t, time.Minute, "standby tasks", func() (bool, string) {
		standby := map[string]bool{}
		for _, m := range members {
			if r := m.Pending(); r != nil {
				m.Reconciled(r)
			}
			as := m.Assignment()
			for _, s := range as.Standby {
				if slices.Contains(as.Active, s) {
					t.Fatalf("member %s has %s both active and standby", m.MemberID(), s)
				}
				standby[s.String()] = true
			}
		}
		return len(standby) == 4, fmt.Sprint(standby)
	})

	// One leaves: the other two take its tasks.
	leaving := members[0]
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := leaving.Close(ctx, kafkaio.LeaveGroup); err != nil {
		t.Fatal(err)
	}
	shares = shareUntil(t, members[1:], allTasks(2, 4))
	t.Logf("after a member left: %v", shares)
}

// TestKafkaStreamsGroupSplitsTasks: three members of one group get disjoint shares of the
// tasks, every task active somewhere, the stateful ones with a standby elsewhere; when one
// leaves, the two others take its tasks. On one node and on three.
func TestKafkaStreamsGroupSplitsTasks(t *testing.T) {
	t.Run("1 node", func(t *testing.T) { testStreamsGroupSplitsTasks(t, 1) })
	t.Run("3 nodes", func(t *testing.T) { testStreamsGroupSplitsTasks(t, 3) })
}

// TestKafkaStreamsGroupRevocationWaitsForTheApplication: a member that must give tasks to a
// newcomer keeps them until its application says it committed them (Reconciled); the
// newcomer is not given them before.
func TestKafkaStreamsGroupRevocationWaitsForTheApplication(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 1})
	a := newApp(t, c, 4, "in", "out")
	fastGroup(t, c, a.id, nil)
	topo, _ := twinTopology(t, "wordcount", a.id, a.topics)
	first := join(t, memberConfig(t, c, a.id, topo))
	reconcileUntil(t, first, time.Minute, "the first member holding every task", func(as kafkaio.Assignment) bool {
		return slices.Equal(taskNames(as.Active), allTasks(2, 4))
	})

	second := join(t, memberConfig(t, c, a.id, topo))
	var revoke *kafkaio.Reconciliation
	waitFor(t, time.Minute, "the first member asked to give tasks back", func() (bool, string) {
		revoke = first.Pending()
		if revoke != nil && len(revoke.Revoke) == 0 {
			first.Reconciled(revoke) // not the step this test is about
		}
		return revoke != nil && len(revoke.Revoke) > 0, first.State()
	})
	t.Logf("to revoke: %v", revoke.Revoke)
	// Several heartbeats later, the tasks are still the first member's, and the newcomer has
	// none of them.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if r := second.Pending(); r != nil {
			for _, task := range r.Target.Active {
				if slices.Contains(revoke.Revoke, task) {
					t.Fatalf("the newcomer was given %s before the first member gave it back", task)
				}
			}
			second.Reconciled(r)
		}
		time.Sleep(50 * time.Millisecond)
	}
	g := c.DescribeStreamsGroup(t, a.id)
	for _, m := range g.Members {
		for _, task := range revoke.Revoke {
			if m.MemberID == second.MemberID() && slices.Contains(flatten(m.Assignment.ActiveTasks), task.String()) {
				t.Fatalf("the broker assigned %s to the newcomer before the first member gave it back: %v", task, m.Assignment.ActiveTasks)
			}
		}
	}
	first.Reconciled(revoke)
	shares := shareUntil(t, []*kafkaio.StreamsMember{first, second}, allTasks(2, 4))
	for _, task := range revoke.Revoke {
		if !slices.Contains(shares[1], task.String()) {
			t.Errorf("revoked task %s went to %v, not the newcomer", task, shares[1])
		}
	}
}

func flatten(lists []kmsg.TaskIDs) []string {
	var out []string
	for _, l := range lists {
		for _, p := range l.Partitions {
			out = append(out, l.SubtopologyID+"_"+strconv.Itoa(int(p)))
		}
	}
	slices.Sort(out)
	return out
}

// TestKafkaStreamsGroupStaticMemberKeepsItsTasks: a static member that leaves for now
// (epoch -2) and comes back within the session timeout gets its tasks back; meanwhile the
// broker gives them to no one. A static member that leaves for good gives them away.
func TestKafkaStreamsGroupStaticMemberKeepsItsTasks(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 1})
	a := newApp(t, c, 4, "in", "out")
	fastGroup(t, c, a.id, map[string]string{"streams.session.timeout.ms": "30000"})
	topo, _ := twinTopology(t, "wordcount", a.id, a.topics)
	staticCfg := memberConfig(t, c, a.id, topo)
	staticCfg.InstanceID = kafkatest.Name(t, "instance")
	static := join(t, staticCfg)
	other := join(t, memberConfig(t, c, a.id, topo))
	shares := shareUntil(t, []*kafkaio.StreamsMember{static, other}, allTasks(2, 4))
	mine, theirs := shares[0], shares[1]

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := static.Close(ctx, kafkaio.LeaveDefault); err != nil {
		t.Fatal(err)
	}
	// While it is away, the other member keeps its own tasks only.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if r := other.Pending(); r != nil {
			if got := taskNames(r.Target.Active); !slices.Equal(got, theirs) {
				t.Fatalf("the static member's tasks moved while it was away: the other member got %v (had %v)", got, theirs)
			}
			other.Reconciled(r)
		}
		time.Sleep(50 * time.Millisecond)
	}

	back := join(t, staticCfg) // a new process: a new member id, the same instance id
	if back.MemberID() == static.MemberID() {
		t.Fatal("a restarted member must have a new member id")
	}
	got := reconcileUntil(t, back, time.Minute, "the static member's tasks back", func(as kafkaio.Assignment) bool { return len(as.Active) > 0 })
	if !slices.Equal(taskNames(got.Active), mine) {
		t.Fatalf("the static member came back to %v, had %v", taskNames(got.Active), mine)
	}

	// Leaving for good (epoch -1) gives its tasks to the other member at once.
	if err := back.Close(ctx, kafkaio.LeaveGroup); err != nil {
		t.Fatal(err)
	}
	shareUntil(t, []*kafkaio.StreamsMember{other}, allTasks(2, 4))
}

// TestKafkaStreamsGroupFencedMemberRejoins: a member the group no longer knows (removed as
// when its session expires) is fenced at its next heartbeat: its application is told every
// task is lost, and once it let go the member joins again and gets tasks.
func TestKafkaStreamsGroupFencedMemberRejoins(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 1})
	a := newApp(t, c, 4, "in", "out")
	fastGroup(t, c, a.id, nil)
	topo, _ := twinTopology(t, "wordcount", a.id, a.topics)
	m := join(t, memberConfig(t, c, a.id, topo))
	reconcileUntil(t, m, time.Minute, "every task", func(as kafkaio.Assignment) bool { return len(as.Active) == 8 })
	epoch := m.Epoch()

	// Someone else removes the member from the group (its id and epoch -1: a leave).
	leave := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	leave.Group, leave.MemberID, leave.MemberEpoch = a.id, m.MemberID(), -1
	resp := c.Request(t, c.GroupCoordinator(t, a.id), leave).(*kmsg.StreamsGroupHeartbeatResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("removing the member: %v", err)
	}

	var lost *kafkaio.Reconciliation
	waitFor(t, time.Minute, "the member told every task is lost", func() (bool, string) {
		lost = m.Pending()
		return lost != nil && lost.Lost, m.State()
	})
	if !lost.Target.Empty() || m.State() != "FENCED" {
		t.Fatalf("lost reconciliation %+v in state %s", lost, m.State())
	}
	// It does not join again while its application still holds the tasks.
	time.Sleep(500 * time.Millisecond) // several heartbeat intervals: nothing may happen
	if g := c.DescribeStreamsGroup(t, a.id); len(g.Members) != 0 {
		t.Fatalf("the fenced member joined again before its application let go: %d members", len(g.Members))
	}
	m.Reconciled(lost)
	got := reconcileUntil(t, m, time.Minute, "every task again", func(as kafkaio.Assignment) bool { return len(as.Active) == 8 })
	if m.Epoch() <= epoch {
		t.Errorf("member epoch %d after rejoining, was %d", m.Epoch(), epoch)
	}
	t.Logf("rejoined with %v at epoch %d", got, m.Epoch())

	// Fenced again, and closed before its application let go: nothing to leave, it stops.
	resp = c.Request(t, c.GroupCoordinator(t, a.id), leave).(*kmsg.StreamsGroupHeartbeatResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("removing the member: %v", err)
	}
	waitFor(t, time.Minute, "fenced again", func() (bool, string) { return m.State() == "FENCED", m.State() })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := m.Close(ctx, kafkaio.LeaveGroup); err != nil || m.State() != "LEFT" {
		t.Fatalf("closing a fenced member: %v, state %s", err, m.State())
	}
}

// TestKafkaStreamsGroupReportsLag: the task offsets and end offsets a member reports reach
// the broker, which shows them per member (and computes lag from them).
func TestKafkaStreamsGroupReportsLag(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 1})
	a := newApp(t, c, 4, "in", "out")
	fastGroup(t, c, a.id, nil)
	topo, _ := twinTopology(t, "wordcount", a.id, a.topics)
	m := join(t, memberConfig(t, c, a.id, topo))
	reconcileUntil(t, m, time.Minute, "every task", func(as kafkaio.Assignment) bool { return len(as.Active) == 8 })
	// Offsets go out with the next heartbeat after the assignment changed (or after
	// streams.task.offset.interval.ms, a minute at least): a second member changes it.
	m.ReportOffsets(map[kafkaio.TaskID]int64{{Subtopology: 1, Partition: 2}: 40}, map[kafkaio.TaskID]int64{{Subtopology: 1, Partition: 2}: 100})
	other := join(t, memberConfig(t, c, a.id, topo))
	shareUntil(t, []*kafkaio.StreamsMember{m, other}, allTasks(2, 4))
	waitFor(t, time.Minute, "the offsets in StreamsGroupDescribe", func() (bool, string) {
		g := c.DescribeStreamsGroup(t, a.id)
		for _, gm := range g.Members {
			if gm.MemberID != m.MemberID() {
				continue
			}
			return len(gm.TaskOffsets) == 1 && gm.TaskOffsets[0].SubtopologyID == "1" && gm.TaskOffsets[0].Partition == 2 && gm.TaskOffsets[0].Offset == 40 &&
				len(gm.TaskEndOffsets) == 1 && gm.TaskEndOffsets[0].Offset == 100, fmt.Sprintf("offsets %+v, end offsets %+v", gm.TaskOffsets, gm.TaskEndOffsets)
		}
		return false, "member not listed"
	})
}

// TestKafkaStreamsGroupEndpoints: members with application.server learn from the broker
// which partitions each endpoint runs, for interactive queries across agents.
func TestKafkaStreamsGroupEndpoints(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 1})
	a := newApp(t, c, 4, "in", "out")
	fastGroup(t, c, a.id, nil)
	topo, _ := twinTopology(t, "wordcount", a.id, a.topics)
	var members []*kafkaio.StreamsMember
	endpoints := []string{"agent-a:9464", "agent-b:9464"}
	for _, ep := range endpoints {
		cfg := memberConfig(t, c, a.id, topo)
		cfg.Endpoint = ep
		members = append(members, join(t, cfg))
	}
	shares := shareUntil(t, members, allTasks(2, 4))
	for i, m := range members {
		want, err := topo.Partitions(m.Assignment().Active)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(want, func(a, b pipeline.TopicPartition) int {
			return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		waitFor(t, time.Minute, "endpoint information", func() (bool, string) {
			for _, viewer := range members {
				if r := viewer.Pending(); r != nil {
					viewer.Reconciled(r)
				}
				idx := viewer.Endpoints()
				if idx == nil {
					return false, viewer.MemberID() + " has no endpoint information yet"
				}
				ep, ok := idx.Endpoints[endpoints[i]]
				if !ok || !slices.Equal(ep.Active, want) || idx.Active[want[0]] != endpoints[i] {
					return false, fmt.Sprintf("%s as seen by %s: %+v (tasks %v)", endpoints[i], viewer.MemberID(), ep, shares[i])
				}
			}
			return true, ""
		})
	}
}

// TestKafkaStreamsGroupMissingSourceTopics: a topology whose source topic does not exist
// stops the member with Kafka Streams' error after twice the heartbeat interval.
func TestKafkaStreamsGroupMissingSourceTopics(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 1})
	a := newApp(t, c, 4, "out")
	a.topics["in"] = kafkatest.Name(t, "never-made")
	fastGroup(t, c, a.id, nil)
	topo, _ := twinTopology(t, "wordcount", a.id, a.topics)
	m := join(t, memberConfig(t, c, a.id, topo))
	select {
	case <-m.Done():
	case <-time.After(time.Minute):
		t.Fatalf("the member did not stop; statuses %v", m.Statuses())
	}
	if err := m.Err(); !errors.Is(err, kafkaio.ErrMissingSourceTopics) || !strings.Contains(err.Error(), a.topics["in"]) {
		t.Fatalf("got %v, want ErrMissingSourceTopics naming %s", err, a.topics["in"])
	}
}

// TestKafkaStreamsGroupIncorrectlyPartitioned: a join of topics with different partition
// counts stops the member with the broker's words.
func TestKafkaStreamsGroupIncorrectlyPartitioned(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 1})
	a := newApp(t, c, 4, "in", "out")
	a.topics["table"] = kafkatest.Name(t, "table")
	c.CreateTopic(t, a.topics["table"], 2, nil)
	fastGroup(t, c, a.id, nil)
	topo, _ := twinTopology(t, "stream_table_join", a.id, a.topics)
	m := join(t, memberConfig(t, c, a.id, topo))
	select {
	case <-m.Done():
	case <-time.After(time.Minute):
		t.Fatalf("the member did not stop; statuses %v", m.Statuses())
	}
	if err := m.Err(); !errors.Is(err, kafkaio.ErrIncorrectlyPartitioned) {
		t.Fatalf("got %v, want ErrIncorrectlyPartitioned", err)
	}
	t.Logf("stopped with: %v", m.Err())
}

// TestKafkaStreamsGroupShutdownApplication: one member asks the whole application to shut
// down; every member stops with ErrApplicationShutdown.
func TestKafkaStreamsGroupShutdownApplication(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 1})
	a := newApp(t, c, 4, "in", "out")
	fastGroup(t, c, a.id, nil)
	topo, _ := twinTopology(t, "wordcount", a.id, a.topics)
	members := []*kafkaio.StreamsMember{join(t, memberConfig(t, c, a.id, topo)), join(t, memberConfig(t, c, a.id, topo))}
	shareUntil(t, members, allTasks(2, 4))
	members[0].RequestShutdown()
	for _, m := range members {
		select {
		case <-m.Done():
		case <-time.After(time.Minute):
			t.Fatalf("member %s did not stop", m.MemberID())
		}
		if err := m.Err(); !errors.Is(err, kafkaio.ErrApplicationShutdown) {
			t.Fatalf("member %s: %v, want ErrApplicationShutdown", m.MemberID(), err)
		}
	}
}

// TestKafkaStreamsGroupStaticMemberAfterACrash: an agent restarted after a crash finds its
// group.instance.id still held by its previous member, which never left: the broker refuses
// it (UNRELEASED_INSTANCE_ID) until that member's session expires. Kafka Streams stops
// there; the member waits and joins then, instead of stopping the agent.
func TestKafkaStreamsGroupStaticMemberAfterACrash(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 1})
	a := newApp(t, c, 4, "in", "out")
	fastGroup(t, c, a.id, map[string]string{"streams.session.timeout.ms": "3000"})
	topo, _ := twinTopology(t, "wordcount", a.id, a.topics)
	cfg := memberConfig(t, c, a.id, topo)
	cfg.InstanceID = kafkatest.Name(t, "instance")

	// The previous incarnation: one join heartbeat with the instance id, then nothing (it
	// crashed). A member of our own declares the topology first.
	first := join(t, memberConfig(t, c, a.id, topo))
	reconcileUntil(t, first, time.Minute, "every task", func(as kafkaio.Assignment) bool { return len(as.Active) == 8 })
	crashed := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	crashed.Group, crashed.MemberID, crashed.InstanceID = a.id, "crashed-incarnation", kmsg.StringPtr(cfg.InstanceID)
	crashed.RebalanceTimeoutMillis, crashed.ProcessID = 30000, kmsg.StringPtr("a5a0c6a4-0c4d-4d3e-9a8b-3c1d2e4f5a6b")
	crashed.ActiveTasks, crashed.StandbyTasks, crashed.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	crashed.Topology = topo.HeartbeatTopology()
	resp := c.Request(t, c.GroupCoordinator(t, a.id), crashed).(*kmsg.StreamsGroupHeartbeatResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("the previous incarnation's join: %v (%v)", err, resp.ErrorMessage)
	}
	crashedAt := time.Now()

	restarted := join(t, cfg)
	waitFor(t, time.Minute, "the restarted member in the group", func() (bool, string) {
		if err := restarted.Err(); err != nil {
			t.Fatalf("the restarted member stopped: %v", err)
		}
		if r := first.Pending(); r != nil {
			first.Reconciled(r)
		}
		if r := restarted.Pending(); r != nil {
			restarted.Reconciled(r)
		}
		return restarted.Epoch() > 0, restarted.State()
	})
	if waited := time.Since(crashedAt); waited < 2*time.Second {
		t.Errorf("joined after %v: the previous incarnation's session (3 s) cannot have expired", waited)
	}
}

// TestKafkaStreamsGroupOffsetCommitNamesTheMember: offsets are committed to the streams
// group (application.id) naming the member and its epoch, as Kafka Streams' consumer does
// (and a transactional commit's group metadata): the broker takes the member's, and refuses
// a commit with an older epoch or from a member it no longer knows, which is what keeps a
// fenced agent from committing.
func TestKafkaStreamsGroupOffsetCommitNamesTheMember(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 1})
	a := newApp(t, c, 4, "in", "out")
	fastGroup(t, c, a.id, nil)
	topo, _ := twinTopology(t, "wordcount", a.id, a.topics)
	m := join(t, memberConfig(t, c, a.id, topo))
	reconcileUntil(t, m, time.Minute, "every task", func(as kafkaio.Assignment) bool { return len(as.Active) == 8 })
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(a.topics["in"])
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(t.Context(), c.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	commit := func(member string, epoch int32) error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = a.id, member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = a.topics["in"], mresp.Topics[0].TopicID // v10 names topics by id
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 42
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(t.Context(), c.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	if err := commit(m.MemberID(), m.Epoch()); err != nil {
		t.Fatalf("the member's commit: %v", err)
	}
	if err := commit(m.MemberID(), m.Epoch()-1); !errors.Is(err, kerr.StaleMemberEpoch) {
		t.Errorf("a commit with an older epoch: %v, want STALE_MEMBER_EPOCH", err)
	}
	if err := commit("not-a-member", m.Epoch()); !errors.Is(err, kerr.UnknownMemberID) {
		t.Errorf("a commit from an unknown member: %v, want UNKNOWN_MEMBER_ID", err)
	}
}
