//go:build kafka && !race

package agent

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
	"github.com/stoatflow/stoatflow/test/kafka/kstreamstest"
)

// regionCountScript counts the users of each region: a KTable groupBy, whose repartition
// topic carries Kafka's Change values.
const regionCountScript = `
local s = require("stoat")
local b = s.builder()
b:table("in")
  :groupBy(function(k, v) return v, k end)
  :count({materialized = "by-region"})
  :toStream()
  :to("out", {valueSerde = "long"})
return b
`

// TestKafkaStreamsGroupTableGroupBy: two agents in a streams group share an exactly-once
// KTable groupBy + count, its re-keyed records going through the repartition topic between
// them. Users join regions, then some move and some are written again in their region: every
// region's count comes out once per value while users join, and ends at its users. The
// repartition topic holds, read_committed, what Kafka Streams 4.4 writes: each row's addition
// ([user][1]), a move's subtraction ([user][0]) and addition as two records, a rewrite in the
// same region as one ([varint len][user][user][2]), each in the partition murmur2 of its
// region.
func TestKafkaStreamsGroupTableGroupBy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agent processes; not in -short")
	}
	c := kafkatest.Start(t, kafkatest.Options{})
	const parts = 4
	b := onCluster(t, c, parts, "in", "out")
	app := kafkatest.Name(t, "app")
	var procs []*replicaProcess
	for i := range 2 {
		procs = append(procs, streamsAgent(t, b, app, regionCountScript, fmt.Sprintf("group.instance.id = \"agent-%d\"", i)))
	}
	for _, p := range procs {
		p.start(t)
	}
	const tasks = 2 * parts // the table's sub-topology and the count's
	pollFor(t, 2*time.Minute, "both agents RUNNING with the tasks between them", func() bool {
		n0, n1 := procs[0].tasks(), procs[1].tasks()
		return n0 > 0 && n1 > 0 && n0+n1 == tasks && procs[0].state() == "RUNNING" && procs[1].state() == "RUNNING"
	})

	const users, regions = 300, 7
	region := func(r int) string { return fmt.Sprintf("region-%d", r) }
	rows := map[string]string{}
	write := func(update func(u int) (string, bool)) {
		t.Helper()
		prod, err := sarama.NewSyncProducer(b.brokers, saramaTestConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		var msgs []*sarama.ProducerMessage
		for u := range users {
			if r, ok := update(u); ok {
				user := fmt.Sprintf("user-%d", u)
				rows[user] = r
				msgs = append(msgs, &sarama.ProducerMessage{Topic: b.topic(t, "in"), Partition: int32(u % parts),
					Key: sarama.StringEncoder(user), Value: sarama.StringEncoder(r)})
			}
		}
		if err := prod.SendMessages(msgs); err != nil {
			t.Fatal(err)
		}
	}
	counts := func() map[string]int64 {
		n := map[string]int64{}
		for _, r := range rows {
			n[r]++
		}
		return n
	}
	write(func(u int) (string, bool) { return region(u % regions), true })
	b.checkExactCounts(t, counts())
	// A third of the users are written again in their region, a third move to the next one.
	var moves, rewrites int
	write(func(u int) (string, bool) {
		switch u % 3 {
		case 0:
			rewrites++
			return region(u % regions), true
		case 1:
			moves++
			return region((u + 1) % regions), true
		}
		return "", false
	})
	checkLatestCounts(t, b.brokers, b.topic(t, "out"), counts())

	// The repartition topic, as Kafka Streams 4.4 writes it (ChangedSerializer).
	topic := app + "-by-region-repartition"
	want := map[byte]int{1: users + moves, 0: moves, 2: rewrites}
	got := map[byte]int{}
	total := users + 2*moves + rewrites
	ch := consumeAll(t, b.brokers, topic, readCommittedConfig())
	deadline := time.After(time.Minute)
	for n := 0; n < total; n++ {
		var m *sarama.ConsumerMessage
		select {
		case m = <-ch:
		case <-deadline:
			t.Fatalf("%s: %d records of %d read (by flag %v)", topic, n, total, got)
		}
		if p := pipeline.DefaultPartition(m.Key, parts); m.Partition != p {
			t.Fatalf("%s: key %q in partition %d, want murmur2's %d", topic, m.Key, m.Partition, p)
		}
		v := m.Value
		flag := v[len(v)-1]
		got[flag]++
		user := ""
		switch flag {
		case 0, 1:
			user = string(v[:len(v)-1])
		case 2:
			n, k := binary.Varint(v)
			if k <= 0 || int(n) != (len(v)-1-k)/2 || string(v[k:k+int(n)]) != string(v[k+int(n):len(v)-1]) {
				t.Fatalf("%s: value %q is no rewrite of one user in ChangedSerializer's layout", topic, v)
			}
			user = string(v[k : k+int(n)])
		default:
			t.Fatalf("%s: value %q ends with flag %d", topic, v, flag)
		}
		if _, ok := rows[user]; !ok {
			t.Fatalf("%s: value %q names no user", topic, v)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: records by flag %v, want %v", topic, got, want)
	}
	for _, p := range procs {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("agent exit: %v", err)
		}
	}
}

// checkLatestCounts waits until every key's latest value in topic (read_committed, longs)
// is want's, and no other key is there.
func checkLatestCounts(t *testing.T, brokers []string, topic string, want map[string]int64) {
	t.Helper()
	ch := consumeAll(t, brokers, topic, readCommittedConfig())
	latest := map[string]int64{}
	deadline := time.After(time.Minute)
	for fmt.Sprint(latest) != fmt.Sprint(want) {
		select {
		case m := <-ch:
			latest[string(m.Key)] = int64(binary.BigEndian.Uint64(m.Value))
		case <-deadline:
			t.Fatalf("%s: latest counts %v, want %v", topic, latest, want)
		}
	}
}

// TestKafkaStreamsMixedGroupTableGroupBy: an agent and a Kafka Streams 4.4 application run the
// same exactly-once KTable groupBy + count in one streams group, each reading the Change
// records the other writes to the repartition topic. Users join regions: every region's count
// comes out once per value. Kafka Streams is killed with SIGKILL while users move: the agent
// takes every task, reading what Kafka Streams left in the repartition topic, and the counts
// end exact. A new Kafka Streams instance takes tasks back; the agent is killed while users
// move again: Kafka Streams reads what the agent wrote there, and the counts end exact.
func TestKafkaStreamsMixedGroupTableGroupBy(t *testing.T) {
	if testing.Short() {
		t.Skip("kills processes; not in -short")
	}
	g := startMixedGroup(t, "table_groupby_count", regionCountScript)
	b := g.b
	const users, regions = 400, 7
	feed := newRegionFeed(t, b.brokers, b.topic(t, "in"), mixedPartitions, users)
	feed.write(func(u int) int { return u % regions })
	b.checkExactCounts(t, feed.counts())

	// Kafka Streams is killed while users move: the agent takes its tasks.
	moving := feed.moving(regions)
	g.killStreams()
	moving.stop()
	checkLatestCounts(t, b.brokers, b.topic(t, "out"), feed.counts())

	// A new Kafka Streams instance joins; the agent is killed while users move.
	ks2 := kstreamstest.Start(t, g.ksOptions)
	g.split("a new Kafka Streams instance and the agent share the tasks", ks2)
	moving = feed.moving(regions)
	g.killAgent(ks2)
	moving.stop()
	checkLatestCounts(t, b.brokers, b.topic(t, "out"), feed.counts())
	t.Logf("%d rows written, counted exactly across the mixed group", feed.written())
	g.closeStreams(ks2)
}

// regionFeed writes users' regions to a table's topic, each user always to the same
// partition, and keeps every user's latest region.
type regionFeed struct {
	t          *testing.T
	prod       sarama.SyncProducer
	topic      string
	partitions int
	users      int

	mu   sync.Mutex
	rows []int // by user: the region, -1 before the first write
	seen map[int]bool
	n    int
}

func newRegionFeed(t *testing.T, brokers []string, topic string, partitions, users int) *regionFeed {
	t.Helper()
	prod, err := sarama.NewSyncProducer(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = prod.Close() })
	f := &regionFeed{t: t, prod: prod, topic: topic, partitions: partitions, users: users, rows: make([]int, users), seen: map[int]bool{}}
	for u := range f.rows {
		f.rows[u] = -1
	}
	return f
}

// send writes every user the region region(u) gives (or none, -1).
func (f *regionFeed) send(region func(u int) int) error {
	var msgs []*sarama.ProducerMessage
	next := map[int]int{}
	for u := range f.users {
		if r := region(u); r >= 0 {
			next[u] = r
			msgs = append(msgs, &sarama.ProducerMessage{Topic: f.topic, Partition: int32(u % f.partitions),
				Key: sarama.StringEncoder(fmt.Sprintf("user-%d", u)), Value: sarama.StringEncoder(fmt.Sprintf("region-%d", r))})
		}
	}
	if err := f.prod.SendMessages(msgs); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for u, r := range next {
		f.rows[u] = r
		f.seen[r] = true
	}
	f.n += len(msgs)
	return nil
}

func (f *regionFeed) write(region func(u int) int) {
	f.t.Helper()
	if err := f.send(region); err != nil {
		f.t.Fatal(err)
	}
}

// moving moves a few users to the next region every 20 ms, and rewrites a few in theirs,
// until stop.
func (f *regionFeed) moving(regions int) *feedFlow {
	quit, done := make(chan struct{}), make(chan error, 1)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for round := 0; ; round++ {
			select {
			case <-quit:
				done <- nil
				return
			case <-tick.C:
				f.mu.Lock()
				cur := slices.Clone(f.rows)
				f.mu.Unlock()
				err := f.send(func(u int) int {
					switch (u + round) % 40 {
					case 0:
						return (cur[u] + 1) % regions
					case 1:
						return cur[u]
					}
					return -1
				})
				if err != nil {
					done <- err
					return
				}
			}
		}
	}()
	flow := &feedFlow{t: f.t, quit: quit, done: done}
	f.t.Cleanup(flow.stopIfRunning)
	return flow
}

func (f *regionFeed) counts() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := map[string]int64{}
	for r := range f.seen {
		// A region all its users left counts 0.
		n[fmt.Sprintf("region-%d", r)] = 0
	}
	for _, r := range f.rows {
		if r >= 0 {
			n[fmt.Sprintf("region-%d", r)]++
		}
	}
	return n
}

func (f *regionFeed) written() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// feedFlow is a feed writing in the background.
type feedFlow struct {
	t       *testing.T
	quit    chan struct{}
	done    chan error
	stopped bool
}

func (f *feedFlow) stop() {
	f.t.Helper()
	f.stopped = true
	close(f.quit)
	if err := <-f.done; err != nil {
		f.t.Fatal(err)
	}
}

func (f *feedFlow) stopIfRunning() {
	if !f.stopped {
		f.stopped = true
		close(f.quit)
		<-f.done
	}
}
