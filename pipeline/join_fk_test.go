package pipeline

import (
	"fmt"
	"strings"
	"testing"
)

// fkOf takes the foreign key before the "/" of a value; "/x" has none.
func fkOf(rec Record) (any, error) {
	fk, _, _ := strings.Cut(rec.Value.(string), "/")
	if fk == "" {
		return nil, nil
	}
	return fk, nil
}

// runFKJoin pipes the same inputs through an inner or left foreign-key join and returns
// what the result's stream wrote.
func runFKJoin(t *testing.T, left bool) []string {
	t.Helper()
	d := tableJoinDriver(t, 1, func(l, r *KTable) (*KTable, error) {
		return l.JoinForeignKey(r, fkOf, joinedPairs, left, TableJoined{}, Materialized{})
	})
	var got []string
	pipe := func(topic, k, v string, ts int64) {
		t.Helper()
		var vb []byte
		if v != "" {
			vb = []byte(v)
		}
		if err := d.topo.Process(&SourceRecord{Topic: topic, Timestamp: ts, Key: []byte(k), Value: vb}); err != nil {
			t.Fatal(err)
		}
		var step []string
		for {
			r, ok := d.ReadOutput("out")
			if !ok {
				break
			}
			step = append(step, fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Timestamp))
		}
		got = append(got, fmt.Sprintf("%d:%s", ts, strings.Join(step, ",")))
	}
	pipe("l", "k1", "a/1", 1)   // left insert, no right row yet
	pipe("r", "a", "A", 2)      // right insert
	pipe("l", "k2", "a/2", 3)   // left insert with a match
	pipe("r", "a", "A2", 4)     // right update fans out to k1 and k2
	pipe("l", "k1", "a/1b", 5)  // left update, same foreign key
	pipe("l", "k1", "b/1", 6)   // foreign key changes to one without a match
	pipe("r", "b", "B", 7)      // the new foreign key's row arrives
	pipe("r", "a", "A3", 8)     // k1 left a: only k2
	pipe("r", "a", "", 9)       // right delete
	pipe("l", "k2", "", 10)     // left delete
	pipe("l", "k1", "/1", 11)   // foreign key becomes null
	pipe("r", "b", "B2", 12)    // k1 no longer references b
	pipe("l", "k3", "c/3", 13)  // a foreign key without a match
	pipe("l", "k3", "c/3b", 14) // the same foreign key, still without a match
	pipe("l", "k4", "/4", 15)   // no foreign key
	pipe("l", "k4", "c/4", 16)  // a first foreign key, without a match
	pipe("r", "d", "D", 30)     // a right row newer than the left rows that follow
	pipe("l", "k5", "d/5", 17)  // joins at the right row's time
	pipe("l", "k5", "", 18)     // deleted: the removal is timed as the join was
	pipe("l", "k6", "d/6", 19)
	pipe("l", "k6", "/6", 21) // the foreign key becomes null
	return got
}

// Kafka Streams 4.4's instructions (SubscriptionSendProcessorSupplier): an inner join answers
// an update that keeps its foreign key, or that gives a row its first, only when the right
// row exists (there was no result to take back); a removal is timed max(left, right) like
// the result it takes back.
func TestForeignKeyInnerJoin(t *testing.T) {
	got := runFKJoin(t, false)
	want := []string{
		"1:",
		"2:k1=k1|a/1|A@2",
		"3:k2=k2|a/2|A@3",
		"4:k1=k1|a/1|A2@4,k2=k2|a/2|A2@4",
		"5:k1=k1|a/1b|A2@5",
		"6:k1=@6",
		"7:k1=k1|b/1|B@7",
		"8:k2=k2|a/2|A3@8",
		"9:k2=@9",
		"10:k2=@10",
		"11:k1=@11",
		"12:",
		"13:",
		"14:",
		"15:",
		"16:",
		"30:",
		"17:k5=k5|d/5|D@30",
		"18:k5=@30",
		"19:k6=k6|d/6|D@30",
		"21:k6=@30",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A left join answers every update once: a changed foreign key (or a deleted row) drops the
// old key's subscription without an answer (DELETE_KEY_NO_PROPAGATE) and answers about the
// new one, null included (KIP-962).
func TestForeignKeyLeftJoin(t *testing.T) {
	got := runFKJoin(t, true)
	want := []string{
		"1:k1=k1|a/1|<nil>@1",
		"2:k1=k1|a/1|A@2",
		"3:k2=k2|a/2|A@3",
		"4:k1=k1|a/1|A2@4,k2=k2|a/2|A2@4",
		"5:k1=k1|a/1b|A2@5",
		"6:k1=k1|b/1|<nil>@6",
		"7:k1=k1|b/1|B@7",
		"8:k2=k2|a/2|A3@8",
		"9:k2=k2|a/2|<nil>@9",
		"10:k2=@10",
		"11:k1=k1|/1|<nil>@11",
		"12:",
		"13:k3=k3|c/3|<nil>@13",
		"14:k3=k3|c/3b|<nil>@14",
		"15:k4=k4|/4|<nil>@15",
		"16:k4=k4|c/4|<nil>@16",
		"30:",
		"17:k5=k5|d/5|D@30",
		"18:k5=@18",
		"19:k6=k6|d/6|D@30",
		"21:k6=k6|/6|<nil>@21",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Subscriptions of one foreign key must not match a longer key sharing its bytes.
func TestForeignKeySubscriptionsOfAPrefixKey(t *testing.T) {
	if k := subscriptionKey([]byte("ab"), []byte("c")); strings.HasPrefix(string(k), string(subscriptionPrefix([]byte("a")))) {
		t.Fatalf("key %q matches the prefix of foreign key a", k)
	}
}

func TestForeignKeyJoinNames(t *testing.T) {
	b := newTestBuilder()
	tables := testTables(t, b, "l", "r")
	j, err := tables[0].JoinForeignKey(tables[1], fkOf, joinedPairs, false, TableJoined{}, Materialized{Given: true})
	if err != nil {
		t.Fatal(err)
	}
	if j.Node().Name != "KTABLE-FK-JOIN-OUTPUT-0000000009" || j.StoreName() != "KTABLE-FK-JOIN-OUTPUT-STATE-STORE-0000000010" {
		t.Fatalf("got node %s, store %s", j.Node().Name, j.StoreName())
	}
	if _, ok := b.stores["KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000007"]; !ok {
		t.Fatalf("no subscription store among %v", b.Stores())
	}
	named, err := tables[0].JoinForeignKey(tables[1], fkOf, joinedPairs, true, TableJoined{Name: "orders"}, Materialized{})
	if err != nil {
		t.Fatal(err)
	}
	if named.Node().Name != "orders" || b.stores["orders-subscription-store"] == nil {
		t.Fatalf("got node %s, stores %v", named.Node().Name, b.Stores())
	}
}

// The tables need not be co-partitioned: the right row is looked up, and subscribed to, in
// the partition Kafka Streams would send the subscription to.
func TestForeignKeyJoinReadsTheForeignKeysPartition(t *testing.T) {
	d := tableJoinDriver(t, 4, func(l, r *KTable) (*KTable, error) {
		return l.JoinForeignKey(r, fkOf, joinedPairs, false, TableJoined{}, Materialized{})
	})
	fkPart := DefaultPartition([]byte("a"), 4)
	leftPart := (fkPart + 1) % 4
	for _, in := range []SourceRecord{
		{Topic: "r", Partition: fkPart, Timestamp: 1, Key: []byte("a"), Value: []byte("A")},
		{Topic: "l", Partition: leftPart, Timestamp: 2, Key: []byte("k"), Value: []byte("a/1")},
		{Topic: "r", Partition: fkPart, Timestamp: 3, Key: []byte("a"), Value: []byte("A2")},
	} {
		if err := d.topo.Process(&in); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			break
		}
		got = append(got, fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Timestamp))
	}
	if want := "k=k|a/1|A@2 k=k|a/1|A2@3"; strings.Join(got, " ") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}

// fkPartitions runs in through an inner foreign-key join of l and r (4 partitions each)
// with tj and returns the results as key=value@partition.
func fkPartitions(t *testing.T, tj TableJoined, in ...SourceRecord) ([]string, error) {
	t.Helper()
	var got []string
	d := tableJoinDriver(t, 4, func(l, r *KTable) (*KTable, error) {
		j, err := l.JoinForeignKey(r, fkOf, joinedPairs, false, tj, Materialized{})
		if err != nil {
			return nil, err
		}
		watch, err := l.b.addNode(&Node{Name: "watch", Kind: ProcessorNode, factory: func() Processor {
			return &funcProc{fn: func(rec Record) {
				got = append(got, fmt.Sprintf("%s=%s@%d", rec.Key, rec.Value.(Change).New, rec.Partition))
			}}
		}})
		j.node.addChild(watch)
		return j, err
	})
	d.topo.appID = "app"
	for _, rec := range in {
		if err := d.topo.Process(&rec); err != nil {
			return nil, err
		}
	}
	return got, nil
}

// funcProc calls fn for each record.
type funcProc struct{ fn func(Record) }

func (p *funcProc) Init(*Context) error      { return nil }
func (p *funcProc) Process(rec Record) error { p.fn(rec); return nil }

// TableJoined partitioners: otherPartitioner says where a foreign key's row and
// subscription live, partitioner where a result goes; each sees Kafka Streams' topic
// (<application.id>-<registration or response topic>) and must choose one partition.
func TestForeignKeyJoinTableJoinedPartitioners(t *testing.T) {
	var topics []string
	fixed := func(p int32) StreamPartitioner {
		return func(topic string, rec Record, n int32) ([]int32, bool, error) {
			topics = append(topics, topic)
			return []int32{p}, true, nil
		}
	}
	in := []SourceRecord{
		{Topic: "r", Partition: 3, Timestamp: 1, Key: []byte("a"), Value: []byte("A")},
		{Topic: "l", Partition: 2, Timestamp: 2, Key: []byte("k"), Value: []byte("a/1")},
		{Topic: "r", Partition: 3, Timestamp: 3, Key: []byte("a"), Value: []byte("A2")},
	}
	got, err := fkPartitions(t, TableJoined{OtherPartitioner: fixed(3), Partitioner: fixed(2)}, in...)
	if err != nil {
		t.Fatal(err)
	}
	if want := "k=k|a/1|A@2 k=k|a/1|A2@2"; strings.Join(got, " ") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
	if want := "app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000006-topic app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic"; strings.Join(topics, " ") != want {
		t.Fatalf("partitioner topics %v, want %s", topics, want)
	}
	// Without the partitioner the foreign key's row is looked for in partition 0, murmur2's.
	if got, err := fkPartitions(t, TableJoined{}, in...); err != nil || len(got) != 0 {
		t.Fatalf("without otherPartitioner: %v, %v; want no match", got, err)
	}
	many := func(string, Record, int32) ([]int32, bool, error) { return []int32{0, 1}, true, nil }
	if _, err := fkPartitions(t, TableJoined{OtherPartitioner: many}, in...); err == nil ||
		!strings.Contains(err.Error(), "The partitions returned by StreamPartitioner#partitions method when used for FK join should be a singleton set") {
		t.Fatalf("two partitions: %v", err)
	}
}

// topicBytesSerde writes the topic into the bytes, as a Schema Registry serde's subject
// follows the topic.
type topicBytesSerde struct{ bytesSerde }

func (topicBytesSerde) Serialize(topic string, _ Headers, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	return []byte(topic + ":" + v.(string)), nil
}

// Kafka Streams serialises the foreign key with the other table's key serde for the
// registration topic when it partitions a subscription, and under the pseudo-topics
// <topic>-fk / -pk for the subscription store's keys (CombinedKeySchema).
func TestForeignKeyJoinSerialisesKeysAsKafkaStreams(t *testing.T) {
	b := NewStreamsBuilder(Serdes{Key: topicBytesSerde{}, Value: bytesSerde{}})
	tables := testTables(t, b, "l", "r")
	j, err := tables[0].JoinForeignKey(tables[1], fkOf, joinedPairs, false, TableJoined{}, Materialized{})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := j.ToStream("")
	if err := s.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	d, err := NewDriver(b, DriverOptions{Partitions: map[string]int32{"l": 4, "r": 4, "out": 1}, Stores: NewMemoryStores(), ApplicationID: "app"})
	if err != nil {
		t.Fatal(err)
	}
	topic := "app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic"
	part := DefaultPartition([]byte(topic+":a"), 4)
	if err := d.topo.Process(&SourceRecord{Topic: "l", Partition: 1, Timestamp: 1, Key: []byte("k"), Value: []byte("a/1")}); err != nil {
		t.Fatal(err)
	}
	subs, err := d.Store("KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000007", part)
	if err != nil {
		t.Fatal(err)
	}
	want := string(subscriptionKey([]byte(topic+"-fk:a"), []byte(topic+"-pk:k")))
	it := subs.bytes.PrefixScan(nil)
	defer it.Close()
	if !it.Next() || string(it.Key()) != want {
		t.Fatalf("subscription in partition %d: %q, want %q", part, it.Key(), want)
	}
}
