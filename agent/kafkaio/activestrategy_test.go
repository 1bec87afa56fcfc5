package kafkaio

import (
	"fmt"
	"testing"

	"github.com/IBM/sarama"
)

// member is one agent as the leader sees it, through the metadata its strategy wrote.
type member struct {
	id string
	s  *ActiveStrategy
}

func newMember(id string, standbys int, position *int64) member {
	return member{id: id, s: NewActiveStrategy(standbys, func() MemberState {
		return MemberState{InstanceID: "i-" + id, Host: id + ":9464", Position: *position}
	})}
}

// rebalance runs one generation: every member's subscription, the plan by the first
// member (the leader), and each member's assignment. It returns the active's id.
func rebalance(t *testing.T, gen int32, topics map[string][]int32, ms ...member) string {
	t.Helper()
	metas := map[string]sarama.ConsumerGroupMemberMetadata{}
	var subscribed []string
	for topic := range topics {
		subscribed = append(subscribed, topic)
	}
	for _, m := range ms {
		ud, err := m.s.SubscriptionUserData(subscribed)
		if err != nil {
			t.Fatal(err)
		}
		metas[m.id] = sarama.ConsumerGroupMemberMetadata{Topics: subscribed, UserData: ud}
	}
	leader := ms[0].s
	plan, err := leader.Plan(metas, topics)
	if err != nil {
		t.Fatal(err)
	}
	active := ""
	for _, m := range ms {
		ud, err := leader.AssignmentData(m.id, plan[m.id], gen)
		if err != nil {
			t.Fatal(err)
		}
		m.s.OnAssignment(&sarama.ConsumerGroupMemberAssignment{Topics: plan[m.id], UserData: ud}, gen)
		role, err := m.s.Role()
		if err != nil {
			t.Fatal(err)
		}
		if role.Active {
			if active != "" {
				t.Fatalf("generation %d: %s and %s are both active", gen, active, m.id)
			}
			active = m.id
			for topic, parts := range topics {
				if fmt.Sprint(plan[m.id][topic]) != fmt.Sprint(parts) {
					t.Fatalf("generation %d: active %s got %v of %s, want all %v", gen, m.id, plan[m.id][topic], topic, parts)
				}
			}
		} else if n := len(plan[m.id]); n != 0 {
			t.Fatalf("generation %d: standby %s got %d topics", gen, m.id, n)
		}
		if role.Generation != gen {
			t.Fatalf("role generation %d, want %d", role.Generation, gen)
		}
	}
	for _, m := range ms {
		role, _ := m.s.Role()
		if role.ActiveInstance != "i-"+active || role.ActiveHost != active+":9464" {
			t.Fatalf("generation %d: %s names %s (%s) as active, want %s", gen, m.id, role.ActiveInstance, role.ActiveHost, active)
		}
	}
	return active
}

func TestActiveStrategyIsStickyAndPicksTheMostCaughtUp(t *testing.T) {
	topics := map[string][]int32{"in": {0, 1, 2}, "other": {0}}
	var pa, pb, pc int64 = 0, 0, 0
	a, b, c := newMember("a", 1, &pa), newMember("b", 1, &pb), newMember("c", 1, &pc)
	if got := rebalance(t, 1, topics, a); got != "a" {
		t.Fatalf("alone: active %s", got)
	}
	// b and c join, further along than a: a stays active all the same, whoever leads.
	pb, pc = 50, 80
	if got := rebalance(t, 2, topics, b, a); got != "a" {
		t.Fatalf("b joined: active %s, want a (sticky)", got)
	}
	if got := rebalance(t, 3, topics, c, b, a); got != "a" {
		t.Fatalf("c joined: active %s, want a (sticky)", got)
	}
	// Only the most caught-up standby is warm with num.standby.replicas = 1, and every
	// member learns its host: the standby host of every key.
	rb, _ := b.s.Role()
	rc, _ := c.s.Role()
	if !rc.Warm || rb.Warm {
		t.Fatalf("warm: b %v, c %v; want c only", rb.Warm, rc.Warm)
	}
	for _, m := range []member{a, b, c} {
		if r, _ := m.s.Role(); fmt.Sprint(r.StandbyHosts) != "[c:9464]" {
			t.Fatalf("%s: standby hosts %v, want [c:9464]", m.id, r.StandbyHosts)
		}
	}
	// a dies: the most caught-up standby takes over.
	if got := rebalance(t, 4, topics, b, c); got != "c" {
		t.Fatalf("a gone: active %s, want c (position 80 > 50)", got)
	}
	// a comes back claiming what it was in generation 3: c, active in 4, stays.
	pa = 1000
	if got := rebalance(t, 5, topics, a, b, c); got != "c" {
		t.Fatalf("a back: active %s, want c", got)
	}
}

// An assignment of the first version, which names no standby hosts, still reads.
func TestActiveStrategyReadsAssignmentsWithoutStandbyHosts(t *testing.T) {
	b := []byte{assignmentDataVersion, roleWarm}
	b = appendString(appendString(b, "i-a"), "a:9464")
	r, err := decodeAssignment(b)
	if err != nil || !r.Warm || r.ActiveHost != "a:9464" || r.StandbyHosts != nil {
		t.Fatalf("role %+v, err %v", r, err)
	}
	if _, err := decodeAssignment(append(b, 0)); err == nil {
		t.Fatal("a truncated list of standby hosts read without an error")
	}
}

func TestActiveStrategyRefusesForeignMetadata(t *testing.T) {
	s := NewActiveStrategy(1, func() MemberState { return MemberState{} })
	_, err := s.Plan(map[string]sarama.ConsumerGroupMemberMetadata{"x": {Topics: []string{"in"}, UserData: []byte{9}}}, map[string][]int32{"in": {0}})
	if err == nil {
		t.Fatal("want an error for user data of another version")
	}
	s.OnAssignment(&sarama.ConsumerGroupMemberAssignment{Topics: map[string][]int32{"in": {0}}}, 7)
	if r, err := s.Role(); err == nil || r.Active {
		t.Fatalf("unreadable assignment: role %+v, err %v; want a standby and an error", r, err)
	}
}
