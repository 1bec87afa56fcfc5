//go:build kafka && !race

package agent

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
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
