package kafkaio

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// testMaxPollRecords is max.poll.records' default.
const testMaxPollRecords = 1000

func newTestConsumer(t *testing.T, e testCluster, group string, topics []string, cfg *sarama.Config, h RebalanceHandler) *Consumer {
	t.Helper()
	return newTestConsumerPolling(t, e, group, topics, cfg, testMaxPollRecords, h)
}

func newTestConsumerPolling(t *testing.T, e testCluster, group string, topics []string, cfg *sarama.Config, maxPollRecords int, h RebalanceHandler) *Consumer {
	t.Helper()
	c, err := NewConsumer(e.Addrs(), group, topics, cfg, maxPollRecords, h)
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(true) })
	return c
}

// receive reads batches until n messages arrived and returns them.
func receive(t *testing.T, c *Consumer, n int) []pipeline.SourceRecord {
	t.Helper()
	var got []pipeline.SourceRecord
	timeout := time.After(30 * time.Second)
	for len(got) < n {
		select {
		case batch, ok := <-c.Messages():
			if !ok {
				t.Fatalf("Messages closed after %d of %d messages", len(got), n)
			}
			if len(batch) == 0 || len(batch) > c.maxBatch {
				t.Fatalf("batch of %d messages, max.poll.records %d", len(batch), c.maxBatch)
			}
			for _, m := range batch[1:] {
				if m.Topic != batch[0].Topic || m.Partition != batch[0].Partition {
					t.Fatalf("batch mixes %s/%d and %s/%d", batch[0].Topic, batch[0].Partition, m.Topic, m.Partition)
				}
			}
			got = append(got, batch...)
		case <-timeout:
			t.Fatalf("received %d of %d messages before the deadline", len(got), n)
		}
	}
	return got
}

func TestConsumeRoundTrip(t *testing.T) {
	consumeRoundTrip(t, startBroker(t))
}

func consumeRoundTrip(t *testing.T, e testCluster) {
	rt := kafkatest.Name(t, "rt")
	createTopic(t, e, rt, 2)
	p, err := NewProducer(e.Addrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	type sent struct {
		key, value []byte
		headers    pipeline.Headers
		ts         int64
	}
	var want []sent
	for i := range 40 {
		s := sent{
			key:   fmt.Appendf(nil, "k%d", i),
			value: fmt.Appendf(nil, "v%d", i),
			// Repeated names keep their order.
			headers: pipeline.Headers{{Key: "trace", Value: fmt.Appendf(nil, "t%d", i)}, {Key: "trace", Value: []byte("second")}, {Key: "empty", Value: []byte{}}},
			ts:      1_700_000_000_000 + int64(i),
		}
		switch i {
		case 3:
			s.key = nil
		case 4:
			s.value = nil
		case 5:
			s.headers = nil
		}
		want = append(want, s)
		if err := p.Send(rt, int32(i%2), s.key, s.value, s.headers, s.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}

	r := &recorder{}
	c := newTestConsumer(t, e, kafkatest.Name(t, "rt-group"), []string{rt}, testConfig(), r)
	c.Start(t.Context())
	got := receive(t, c, len(want))
	if r.generation.Load() == 0 {
		t.Fatal("messages delivered before Assigned")
	}

	next := map[int32]int64{}
	for _, m := range got {
		if m.Offset != next[m.Partition] {
			t.Fatalf("partition %d: offset %d, want %d (offset order)", m.Partition, m.Offset, next[m.Partition])
		}
		next[m.Partition]++
		i := int(m.Partition) + 2*int(m.Offset)
		w := want[i]
		if !bytes.Equal(m.Key, w.key) || (m.Key == nil) != (w.key == nil) {
			t.Errorf("record %d: key %q, want %q", i, m.Key, w.key)
		}
		if !bytes.Equal(m.Value, w.value) || (m.Value == nil) != (w.value == nil) {
			t.Errorf("record %d: value %q, want %q", i, m.Value, w.value)
		}
		if m.Timestamp != w.ts {
			t.Errorf("record %d: timestamp %d, want %d", i, m.Timestamp, w.ts)
		}
		if len(m.Headers) != len(w.headers) {
			t.Fatalf("record %d: headers %v, want %v", i, m.Headers, w.headers)
		}
		for j := range m.Headers {
			if m.Headers[j].Key != w.headers[j].Key || !bytes.Equal(m.Headers[j].Value, w.headers[j].Value) {
				t.Errorf("record %d: header %d = %q:%q, want %q:%q", i, j, m.Headers[j].Key, m.Headers[j].Value, w.headers[j].Key, w.headers[j].Value)
			}
		}
	}

	assigned, _ := r.calls()
	if want := []pipeline.TopicPartition{{Topic: rt, Partition: 0}, {Topic: rt, Partition: 1}}; !reflect.DeepEqual(assigned[len(assigned)-1], want) {
		t.Errorf("Assigned %v, want %v", assigned, want)
	}
	eventually(t, 10*time.Second, "lag 0 on both partitions", func() bool {
		lag := c.Lag()
		return len(lag) == 2 && lag[pipeline.TopicPartition{Topic: rt, Partition: 0}] == 0 && lag[pipeline.TopicPartition{Topic: rt, Partition: 1}] == 0
	})
}

func TestCommitThenResume(t *testing.T) {
	commitThenResume(t, startBroker(t))
}

func commitThenResume(t *testing.T, e testCluster) {
	resume, group := kafkatest.Name(t, "resume"), kafkatest.Name(t, "resume-group")
	internalTopic := kafkatest.Name(t, "internal")
	createTopic(t, e, resume, 2)
	createTopic(t, e, internalTopic, 1)
	produceN(t, e, resume, 0, 0, 10)
	tp0, tp1 := pipeline.TopicPartition{Topic: resume, Partition: 0}, pipeline.TopicPartition{Topic: resume, Partition: 1}

	r := &recorder{}
	c := newTestConsumer(t, e, group, []string{resume}, testConfig(), r)
	if err := c.Commit(map[pipeline.TopicPartition]int64{tp0: 1}); err == nil {
		t.Error("Commit before any generation: want an error")
	}
	c.Start(t.Context())
	receive(t, c, 10)
	// Processed offsets 0..5: the next offset to read is 6.
	if err := c.Commit(map[pipeline.TopicPartition]int64{tp0: 6}); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := c.Commit(map[pipeline.TopicPartition]int64{{Topic: resume, Partition: 2}: 1}); err == nil {
		t.Error("Commit of a partition of the subscription not assigned: want an error")
	}
	// A topic beside the subscription (an internal topic of Kafka Streams taken over).
	internal := pipeline.TopicPartition{Topic: internalTopic, Partition: 0}
	if err := c.Commit(map[pipeline.TopicPartition]int64{internal: 3}); err != nil {
		t.Errorf("Commit of a partition beside the subscription: %v", err)
	}
	committed, err := c.Committed([]pipeline.TopicPartition{tp0, tp1, internal})
	if err != nil {
		t.Fatal(err)
	}
	if committed[tp0] != 6 || committed[tp1] != -1 || committed[internal] != 3 {
		t.Fatalf("Committed = %v, want %v:6, %v:-1 and %v:3", committed, tp0, tp1, internal)
	}
	if err := c.Close(true); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Commit(map[pipeline.TopicPartition]int64{tp0: 7}); err == nil {
		t.Error("Commit after Close: want an error")
	}

	c2 := newTestConsumer(t, e, group, []string{resume}, testConfig(), &recorder{})
	c2.Start(t.Context())
	got := receive(t, c2, 4)
	if got[0].Offset != 6 || got[3].Offset != 9 {
		t.Fatalf("resumed at offsets %d..%d, want 6..9", got[0].Offset, got[3].Offset)
	}
}

// A batch holds at most max.poll.records messages, even when sarama holds a backlog: here
// nobody reads until the Messages channel is full (or, with larger batches, holds them all)
// and sarama has fetched the rest.
func TestBatchesKeepToMaxPollRecords(t *testing.T) {
	batchesKeepToMaxPollRecords(t, startBroker(t))
}

func batchesKeepToMaxPollRecords(t *testing.T, e testCluster) {
	poll := kafkatest.Name(t, "poll")
	createTopic(t, e, poll, 1)
	const n, maxPoll = 200, 7
	produceN(t, e, poll, 0, 0, n)
	tp := pipeline.TopicPartition{Topic: poll, Partition: 0}
	c := newTestConsumerPolling(t, e, kafkatest.Name(t, "poll-group"), []string{poll}, testConfig(), maxPoll, &recorder{})
	c.Start(t.Context())
	eventually(t, 30*time.Second, "a full Messages channel", func() bool {
		lag, ok := c.Lag()[tp]
		return len(c.Messages()) == cap(c.Messages()) || ok && lag == 0 && len(c.Messages()) > 0
	})
	full := false
	timeout := time.After(30 * time.Second)
	for next := int64(0); next < n; {
		var batch []pipeline.SourceRecord
		select {
		case batch = <-c.Messages():
		case <-timeout:
			t.Fatalf("received %d of %d messages before the deadline", next, n)
		}
		if len(batch) > maxPoll {
			t.Fatalf("a batch of %d messages at offset %d, max.poll.records %d", len(batch), batch[0].Offset, maxPoll)
		}
		for _, m := range batch {
			if m.Offset != next {
				t.Fatalf("offset %d, want %d", m.Offset, next)
			}
			next++
		}
		full = full || len(batch) == maxPoll
	}
	if !full {
		t.Error("no batch filled up to max.poll.records from the backlog")
	}
}

func TestRevokingOnCloseDropsBufferedBatches(t *testing.T) {
	revokingOnCloseDropsBufferedBatches(t, startBroker(t))
}

func revokingOnCloseDropsBufferedBatches(t *testing.T, e testCluster) {
	backlog, group := kafkatest.Name(t, "backlog"), kafkatest.Name(t, "backlog-group")
	createTopic(t, e, backlog, 1)
	const n = 3000
	produceN(t, e, backlog, 0, 0, n)
	tp := pipeline.TopicPartition{Topic: backlog, Partition: 0}

	r := &recorder{}
	const maxPoll = 100
	c := newTestConsumerPolling(t, e, group, []string{backlog}, testConfig(), maxPoll, r)
	var commitErr error
	r.onRevoking = func([]pipeline.TopicPartition) {
		commitErr = c.Commit(map[pipeline.TopicPartition]int64{tp: 1})
	}
	c.Start(t.Context())
	// Nobody reads: the channel fills up and fetching stops behind it.
	eventually(t, 30*time.Second, "a full Messages channel", func() bool {
		return len(c.Messages()) == cap(c.Messages())
	})
	// At most cap batches of max.poll.records are queued, so the rest is lag.
	if lag := c.Lag()[tp]; lag < n-int64(cap(c.Messages()))*maxPoll {
		t.Errorf("lag with a full channel = %d, want >= %d", lag, n-cap(c.Messages())*maxPoll)
	}

	if err := c.Close(false); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, revoked := r.calls()
	if !reflect.DeepEqual(revoked, [][]pipeline.TopicPartition{{tp}}) {
		t.Fatalf("Revoking calls = %v, want one with %v", revoked, tp)
	}
	if commitErr != nil {
		t.Fatalf("Commit inside Revoking: %v", commitErr)
	}
	if got := committedOffset(t, e, group, tp); got != 1 {
		t.Errorf("committed offset = %d, want 1", got)
	}
	for batch := range c.Messages() {
		t.Fatalf("batch at offset %d delivered after Revoking", batch[0].Offset)
	}
}

func TestRebalanceBetweenTwoMembers(t *testing.T) {
	rebalanceBetweenTwoMembers(t, startBroker(t))
}

func rebalanceBetweenTwoMembers(t *testing.T, e testCluster) {
	shared, group := kafkatest.Name(t, "shared"), kafkatest.Name(t, "shared-group")
	createTopic(t, e, shared, 2)
	produceN(t, e, shared, 0, 0, 5)
	produceN(t, e, shared, 1, 0, 5)

	drain := func(c *Consumer, wg *sync.WaitGroup) {
		defer wg.Done()
		for range c.Messages() {
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()

	ra := &recorder{}
	a := newTestConsumer(t, e, group, []string{shared}, testConfig(), ra)
	var revokeCommitErr error
	ra.onRevoking = func(tps []pipeline.TopicPartition) {
		offsets := map[pipeline.TopicPartition]int64{}
		for _, tp := range tps {
			offsets[tp] = 2
		}
		revokeCommitErr = a.Commit(offsets)
	}
	a.Start(t.Context())
	wg.Add(1)
	go drain(a, &wg)
	eventually(t, 30*time.Second, "first member assigned", func() bool { return ra.generation.Load() == 1 })

	rb := &recorder{}
	b := newTestConsumer(t, e, group, []string{shared}, testConfig(), rb)
	b.Start(t.Context())
	wg.Add(1)
	go drain(b, &wg)
	eventually(t, 30*time.Second, "rebalance to two members", func() bool {
		return ra.generation.Load() >= 2 && rb.generation.Load() >= 1
	})

	aAssigned, aRevoked := ra.calls()
	bAssigned, _ := rb.calls()
	if want := []pipeline.TopicPartition{{Topic: shared, Partition: 0}, {Topic: shared, Partition: 1}}; !reflect.DeepEqual(aRevoked[0], want) {
		t.Errorf("first member revoked %v, want %v", aRevoked[0], want)
	}
	if revokeCommitErr != nil {
		t.Errorf("Commit inside Revoking during a rebalance: %v", revokeCommitErr)
	}
	lastA, lastB := aAssigned[len(aAssigned)-1], bAssigned[len(bAssigned)-1]
	if len(lastA) != 1 || len(lastB) != 1 || lastA[0] == lastB[0] {
		t.Errorf("after the rebalance: first member has %v, second %v; want one partition each", lastA, lastB)
	}
	if err := a.Close(true); err != nil {
		t.Error(err)
	}
	if err := b.Close(true); err != nil {
		t.Error(err)
	}
}

func TestStaticMembership(t *testing.T) {
	staticMembership(t, startBroker(t))
}

func staticMembership(t *testing.T, e testCluster) {
	static, group := kafkatest.Name(t, "static"), kafkatest.Name(t, "static-group")
	createTopic(t, e, static, 2)
	cfg := testConfig()
	cfg.Consumer.Group.InstanceId = "node-1"
	admin, err := sarama.NewClusterAdmin(e.Addrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	members := func() []groupMember {
		t.Helper()
		groups, err := admin.DescribeConsumerGroups([]string{group})
		if err != nil || len(groups) != 1 {
			t.Fatalf("describe group %s: %v %v", group, groups, err)
		}
		var ms []groupMember
		for id, m := range groups[0].Members {
			ms = append(ms, groupMember{id, m.GroupInstanceId})
		}
		return ms
	}

	r1 := &recorder{}
	c1 := newTestConsumer(t, e, group, []string{static}, cfg, r1)
	c1.Start(t.Context())
	eventually(t, 30*time.Second, "static member assigned", func() bool { return r1.generation.Load() == 1 })
	ms := members()
	if len(ms) != 1 || ms[0].instance == nil || *ms[0].instance != "node-1" {
		t.Fatalf("group members = %v, want one with instance id node-1", ms)
	}

	// Closing without leaving keeps the member, well within the 6 s session timeout.
	if err := c1.Close(false); err != nil {
		t.Fatalf("Close(false): %v", err)
	}
	if after := members(); len(after) != 1 {
		t.Fatalf("after Close(false) the group has members %v, want the static member kept", after)
	}

	r2 := &recorder{}
	c2 := newTestConsumer(t, e, group, []string{static}, cfg, r2)
	c2.Start(t.Context())
	eventually(t, 30*time.Second, "restarted static member assigned", func() bool { return r2.generation.Load() >= 1 })
	assigned, _ := r2.calls()
	if want := []pipeline.TopicPartition{{Topic: static, Partition: 0}, {Topic: static, Partition: 1}}; !reflect.DeepEqual(assigned[len(assigned)-1], want) {
		t.Errorf("restarted member assigned %v, want %v", assigned, want)
	}

	// Leaving for good removes it at once, not after the session timeout.
	if err := c2.Close(true); err != nil {
		t.Fatalf("Close(true): %v", err)
	}
	eventually(t, 3*time.Second, "the static member to leave", func() bool { return len(members()) == 0 })
}

// groupMember is a member of a group as DescribeGroups names it.
type groupMember struct {
	id       string
	instance *string
}

func (m groupMember) String() string {
	if m.instance == nil {
		return m.id
	}
	return m.id + "(" + *m.instance + ")"
}

func TestConsumerReportsJoinErrors(t *testing.T) {
	consumerReportsJoinErrors(t, startBroker(t))
}

func consumerReportsJoinErrors(t *testing.T, e testCluster) {
	group := kafkatest.Name(t, "lost-group")
	c := newTestConsumer(t, e, group, []string{kafkatest.Name(t, "no-such-topic")}, testConfig(), &recorder{})
	c.Start(t.Context())
	select {
	case err := <-c.Errors():
		if err == nil || !strings.Contains(err.Error(), strconv.Quote(group)) {
			t.Fatalf("error %v does not name the group", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no error reported for a missing topic")
	}
}

func TestNewConsumerRefusesBadConfig(t *testing.T) {
	coop := testConfig()
	coop.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyCooperativeSticky()}
	old := testConfig()
	old.Version = sarama.V2_1_0_0
	old.Consumer.Group.InstanceId = "x"
	cases := map[string]struct {
		group   string
		topics  []string
		cfg     *sarama.Config
		maxPoll int
		h       RebalanceHandler
	}{
		"cooperative":         {"g", []string{"t"}, coop, testMaxPollRecords, &recorder{}},
		"static on old kafka": {"g", []string{"t"}, old, testMaxPollRecords, &recorder{}},
		"no topics":           {"g", nil, testConfig(), testMaxPollRecords, &recorder{}},
		"no group":            {"", []string{"t"}, testConfig(), testMaxPollRecords, &recorder{}},
		"no handler":          {"g", []string{"t"}, testConfig(), testMaxPollRecords, nil},
		"no config":           {"g", []string{"t"}, nil, testMaxPollRecords, &recorder{}},
		"no max.poll.records": {"g", []string{"t"}, testConfig(), 0, &recorder{}},
	}
	for name, tc := range cases {
		if c, err := NewConsumer([]string{"127.0.0.1:1"}, tc.group, tc.topics, tc.cfg, tc.maxPoll, tc.h); err == nil {
			_ = c.Close(true)
			t.Errorf("%s: want an error", name)
		}
	}
}

// An offset commit does not queue behind a fetch the broker holds for fetch.max.wait.ms:
// with nothing to fetch and a long wait, a commit still returns at once, as the Java
// consumer's does on its own connection to the coordinator.
func TestCommitDoesNotWaitForAFetchLongPoll(t *testing.T) {
	commitDoesNotWaitForAFetchLongPoll(t, startBroker(t))
}

func commitDoesNotWaitForAFetchLongPoll(t *testing.T, e testCluster) {
	idle := kafkatest.Name(t, "idle")
	createTopic(t, e, idle, 1)
	produceN(t, e, idle, 0, 0, 1)
	cfg := testConfig()
	cfg.Consumer.MaxWaitTime = 4 * time.Second // below the session timeout: heartbeats wait too
	c := newTestConsumer(t, e, kafkatest.Name(t, "idle-group"), []string{idle}, cfg, &recorder{})
	c.Start(t.Context())
	receive(t, c, 1)
	tp := pipeline.TopicPartition{Topic: idle, Partition: 0}
	for i := range 3 {
		start := time.Now()
		if err := c.Commit(map[pipeline.TopicPartition]int64{tp: 1}); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		if took := time.Since(start); took > time.Second {
			t.Fatalf("commit %d took %v: it waited for the fetch the broker holds (fetch.max.wait.ms 4 s)", i, took)
		}
	}
}

// A coordinator that says it is not the group's (NOT_COORDINATOR: the coordinator moved)
// fails the commit; the next commit finds the coordinator again and commits.
func TestCommitAfterNotCoordinator(t *testing.T) {
	e := startBroker(t)
	createTopic(t, e, "moved", 1)
	produceN(t, e, "moved", 0, 0, 1)
	c := newTestConsumer(t, e, "moved-group", []string{"moved"}, testConfig(), &recorder{})
	c.Start(t.Context())
	receive(t, c, 1)
	tp := pipeline.TopicPartition{Topic: "moved", Partition: 0}
	e.cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Err: kerr.NotCoordinator})
	if err := c.Commit(map[pipeline.TopicPartition]int64{tp: 1}); !errors.Is(err, sarama.ErrNotCoordinatorForConsumer) {
		t.Fatalf("Commit = %v, want NOT_COORDINATOR", err)
	}
	if err := c.Commit(map[pipeline.TopicPartition]int64{tp: 1}); err != nil {
		t.Fatalf("Commit after NOT_COORDINATOR: %v", err)
	}
	if got, err := c.Committed([]pipeline.TopicPartition{tp}); err != nil || got[tp] != 1 {
		t.Fatalf("Committed = %v, %v; want %v:1", got, err, tp)
	}
}
