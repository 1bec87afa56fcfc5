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

// The join's nodes, topics and stores take Kafka Streams 4.4's names and indices (the
// conformance suite compares whole descriptions): after the two tables (0-5), the
// registration topic 6, its processor 7, sink 8 and source 9, the subscription store 10, the
// receive, join-foreign and foreign-join processors 11-13, the response topic 14, its sink 15
// and source 16, the resolver 17, the result 18 and its store 19.
func TestForeignKeyJoinNames(t *testing.T) {
	b := newTestBuilder()
	tables := testTables(t, b, "l", "r")
	j, err := tables[0].JoinForeignKey(tables[1], fkOf, joinedPairs, false, TableJoined{}, Materialized{Given: true})
	if err != nil {
		t.Fatal(err)
	}
	if j.Node().Name != "KTABLE-FK-JOIN-OUTPUT-0000000018" || j.StoreName() != "KTABLE-FK-JOIN-OUTPUT-STATE-STORE-0000000019" {
		t.Fatalf("got node %s, store %s", j.Node().Name, j.StoreName())
	}
	if spec, ok := b.stores["KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010"]; !ok || spec.Type != TimestampedKeyValueStoreType || !spec.Headers {
		t.Fatalf("no headers-aware subscription store among %v", b.Stores())
	}
	named, err := tables[0].JoinForeignKey(tables[1], fkOf, joinedPairs, true, TableJoined{Name: "orders"}, Materialized{})
	if err != nil {
		t.Fatal(err)
	}
	if named.Node().Name != "orders-result" || b.stores["orders-subscription-store"] == nil {
		t.Fatalf("got node %s, stores %v", named.Node().Name, b.Stores())
	}
	want := "KSTREAM-SOURCE-0000000001 KTABLE-SOURCE-0000000002 KSTREAM-SOURCE-0000000004 KTABLE-SOURCE-0000000005 " +
		"KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000007 KTABLE-SINK-0000000008 KTABLE-SOURCE-0000000009 " +
		"KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000011 KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000012 " +
		"KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000013 KTABLE-SINK-0000000015 KTABLE-SOURCE-0000000016 " +
		"KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000017 KTABLE-FK-JOIN-OUTPUT-0000000018 " +
		"orders-subscription-registration-processor orders-subscription-registration-sink orders-subscription-registration-source " +
		"orders-subscription-receive orders-subscription-join-foreign orders-foreign-join-subscription " +
		"orders-subscription-response-sink orders-subscription-response-source orders-subscription-response-resolver orders-result"
	if got := names(b); got != want {
		t.Fatalf("nodes\n%s\nwant\n%s", got, want)
	}
}

// The tables need not be co-partitioned: the right row is looked up, and subscribed to, in
// the partition of the registration topic Kafka Streams would send the subscription to,
// co-partitioned with the right table.
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
	// The subscription, its answer, then the answer to the right row's update.
	if want := "app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic " +
		"app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic"; strings.Join(topics, " ") != want {
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
	subs, err := d.Store("KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010", part)
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

// An answer about a value the row no longer has is dropped, as Kafka Streams'
// ResponseJoinProcessorSupplier drops one whose hash is not the row's: with the record cache
// the row's new value reaches the join only at the flush, so a right update in between is
// answered with the old value's subscription; the answer to the new one follows.
func TestForeignKeyJoinDropsStaleAnswers(t *testing.T) {
	b := newTestBuilder()
	l, err := b.Table("l", Consumed{}, Materialized{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Table("r", Consumed{}, Materialized{Given: true, StoreName: "r-store", CachingDisabled: true})
	if err != nil {
		t.Fatal(err)
	}
	j, err := l.JoinForeignKey(r, fkOf, joinedPairs, false, TableJoined{}, Materialized{})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := j.ToStream("")
	if err := s.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	sensors := newCountingSensors()
	d := &Driver{outputs: map[string][]OutputRecord{}, partitions: map[string]int32{}, offsets: map[string]int64{}}
	topo, err := b.Build(TopologyOptions{Collector: d, Stores: NewMemoryStores(), CacheMaxBytes: 1 << 20, Sensors: sensors,
		SourcePartitions: map[string]int32{"l": 1, "r": 1}})
	if err != nil {
		t.Fatal(err)
	}
	d.topo = topo
	step := func(topic, k, v string, ts int64, flush bool) string {
		t.Helper()
		if err := topo.Process(&SourceRecord{Topic: topic, Key: []byte(k), Value: []byte(v), Timestamp: ts}); err != nil {
			t.Fatal(err)
		}
		if flush {
			if err := topo.FlushCaches(); err != nil {
				t.Fatal(err)
			}
		}
		return strings.Join(outputs(d), " ")
	}
	for _, c := range []struct {
		topic, k, v string
		flush       bool
		want        string
	}{
		{"r", "a", "A", true, ""},
		{"l", "k", "a/1", true, "k=k|a/1|A"},
		{"l", "k", "a/2", false, ""}, // stored, not forwarded until the flush
		{"r", "a", "A2", false, ""},  // answers the a/1 subscription: stale
		{"l", "x", "b/1", true, "k=k|a/2|A2"},
	} {
		if got := step(c.topic, c.k, c.v, 1, c.flush); got != c.want {
			t.Fatalf("%s %s=%s: got %q, want %q", c.topic, c.k, c.v, got, c.want)
		}
	}
	if n := sensors.dropped["KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000016/stale"]; n != 1 {
		t.Fatalf("stale answers dropped: %d, want 1 (%v)", n, sensors.dropped)
	}
}

// Either table may be a filter's or mapValues' result, read through its value getter as
// Kafka Streams reads it: the join-foreign and resolver processors list the stores the rows
// come from.
func TestForeignKeyJoinOfDerivedTables(t *testing.T) {
	b := newTestBuilder()
	tables := testTables(t, b, "l", "r")
	kept, err := tables[0].Filter(func(rec Record) (bool, error) { return !strings.HasSuffix(rec.Value.(string), "/drop"), nil }, false, "")
	if err != nil {
		t.Fatal(err)
	}
	upper, err := tables[1].MapValues(func(rec Record) (any, error) { return strings.ToUpper(rec.Value.(string)), nil }, "")
	if err != nil {
		t.Fatal(err)
	}
	j, err := kept.JoinForeignKey(upper, fkOf, joinedPairs, false, TableJoined{Name: "j"}, Materialized{})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := j.ToStream("")
	if err := s.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	text := b.Describe().String()
	for _, want := range []string{
		"Processor: j-subscription-join-foreign (stores: [r-STATE-STORE-0000000003])",
		"Processor: j-subscription-response-resolver (stores: [l-STATE-STORE-0000000000])",
	} {
		if !strings.Contains(text, want) {
			t.Fatalf("describe lacks %q:\n%s", want, text)
		}
	}
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores(), ApplicationID: "app"})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []struct{ topic, k, v string }{
		{"r", "a", "x"},
		{"l", "k", "a/1"},
		{"r", "a", "y"},
		{"l", "k", "a/drop"}, // filtered out: the result goes
	} {
		if err := d.Pipe(in.topic, []byte(in.k), []byte(in.v), 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := strings.Join(outputs(d), " "), "k=k|a/1|X k=k|a/1|Y k="; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
