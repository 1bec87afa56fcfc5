package pipeline

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// readOut is what the driver's topic out received since the last read.
func readOut(d *Driver) []string {
	var out []string
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			return out
		}
		out = append(out, fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Timestamp))
	}
}

// A record Kafka Streams left in a repartition topic goes, in the partition it was written
// to, where the in-memory route would have taken it: here the table's partition of the new
// key.
func TestProcessInternalTakesOverARepartitionTopic(t *testing.T) {
	d, _, err := keyedJoinDriver(t, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"u1", "u2"} {
		processAt(t, d, "users", DefaultPartition([]byte(u), 3), u, "name-"+u, 1)
	}
	topics := d.topo.InternalTopics()
	if len(topics) != 1 || !strings.HasSuffix(topics[0].Name, "-repartition") || topics[0].Partitions != 3 {
		t.Fatalf("internal topics %+v, want one repartition topic of 3 partitions", topics)
	}
	in := &SourceRecord{Topic: "app-" + topics[0].Name, Partition: DefaultPartition([]byte("u2"), 3), Offset: 7,
		Timestamp: 5, Key: []byte("u2"), Value: []byte("u2")}
	if err := d.topo.ProcessInternal(topics[0].Name, in); err != nil {
		t.Fatal(err)
	}
	if got, want := readOut(d), []string{"u2=u2|name-u2@5"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("output %q, want %q", got, want)
	}
	// The wrong partition: the table's row is not there, as in Kafka Streams.
	in.Partition = (in.Partition + 1) % 3
	if err := d.topo.ProcessInternal(topics[0].Name, in); err != nil {
		t.Fatal(err)
	}
	if got := readOut(d); len(got) != 0 {
		t.Fatalf("output %q from another partition's table", got)
	}
	if err := d.topo.ProcessInternal("no-such-repartition", in); err == nil {
		t.Fatal("a topic that is no internal topic of the topology was processed")
	}
}

// A KTable groupBy's repartition topic carries Kafka's ChangedSerializer bytes: StoatFlow
// writes the three layouts Kafka Streams 4.4 writes, and reads those and the three with an
// isLatest byte that ChangedDeserializer also reads.
func TestChangedSerdeLayouts(t *testing.T) {
	s := changedSerde{keys: bytesSerde{}, values: bytesSerde{}}
	for _, c := range []struct {
		change Change
		value  []byte
	}{
		{Change{Old: "old"}, []byte("old\x00")},
		{Change{New: "new"}, []byte("new\x01")},
		{Change{New: "new", Old: "old"}, []byte("\x06newold\x02")},
		{Change{New: "", Old: "o"}, []byte("\x00o\x02")},
	} {
		key, value, err := s.encode(nil, "app-t-repartition", Record{Key: "k", Value: c.change})
		if err != nil || string(key) != "k" || !bytes.Equal(value, c.value) {
			t.Errorf("encode %+v: %q %q %v, want %q", c.change, key, value, err, c.value)
		}
		rec, err := s.decode(nil, &SourceRecord{Topic: "app-t-repartition", Key: key, Value: value})
		if err != nil || rec.Key != "k" || rec.Value != c.change {
			t.Errorf("decode %q: %+v %v, want %+v", value, rec, err, c.change)
		}
	}
	if _, _, err := s.encode(nil, "app-t-repartition", Record{Key: "k", Value: Change{}}); err == nil {
		t.Error("a change without old or new value was written")
	}
	for value, want := range map[string]Change{
		"old\x01\x03":        {Old: "old"},
		"new\x00\x04":        {New: "new", OutOfOrder: true},
		"\x06newold\x01\x05": {New: "new", Old: "old"},
		"\x06newold\x00\x05": {New: "new", Old: "old", OutOfOrder: true},
	} {
		rec, err := s.decode(nil, &SourceRecord{Key: []byte("k"), Value: []byte(value)})
		if err != nil || rec.Value != want {
			t.Errorf("decode %q: %+v %v, want %+v", value, rec.Value, err, want)
		}
	}
	for _, value := range []string{"", "x\x06", "x\x02\x03", "\x10ab\x02", "\x06newold\x00"[:1] + "\x05"} {
		var de *DeserializationError
		if _, err := s.decode(nil, &SourceRecord{Key: []byte("k"), Value: []byte(value)}); !errors.As(err, &de) {
			t.Errorf("decode %q: %v, want a deserialization error", value, err)
		}
	}
}

// A record Kafka Streams left in a KTable groupBy's repartition topic goes through the
// aggregation as the in-memory route's Change: subtract the old value, add the new one.
func TestProcessInternalTakesOverATableGroupByRepartition(t *testing.T) {
	b := newTestBuilder()
	tables := testTables(t, b, "in")
	g, err := tables[0].GroupBy(func(rec Record) (any, any, error) { return rec.Value, rec.Key, nil }, Grouped{})
	if err != nil {
		t.Fatal(err)
	}
	concat := func(sign string) Aggregator {
		return func(rec Record, agg any) (any, error) { return agg.(string) + sign + rec.Value.(string), nil }
	}
	sums, err := g.Reduce(concat("+"), concat("-"), Materialized{}, "")
	if err != nil {
		t.Fatal(err)
	}
	s, err := sums.ToStream("")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores(), ApplicationID: "app"})
	if err != nil {
		t.Fatal(err)
	}
	topics := d.topo.InternalTopics()
	if len(topics) != 1 || !strings.HasSuffix(topics[0].Name, "-repartition") {
		t.Fatalf("internal topics %+v, want the groupBy's repartition topic", topics)
	}
	for i, value := range []string{"a\x01", "\x02ba\x02", "b\x00", "c\x01\x04"} {
		in := &SourceRecord{Topic: "app-" + topics[0].Name, Offset: int64(i), Timestamp: int64(i), Key: []byte("g"), Value: []byte(value)}
		if err := d.topo.ProcessInternal(topics[0].Name, in); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := readOut(d), []string{"g=a@0", "g=a-a+b@1", "g=a-a+b-b@2", "g=a-a+b-b+c@3"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("output %q, want %q", got, want)
	}
}

// Records Kafka Streams left in a foreign-key join's topics, in its own layouts
// (SubscriptionWrapperSerde version 1, SubscriptionResponseWrapperSerde version 0), go
// through the join as the records the in-memory routes carry.
func TestProcessInternalTakesOverForeignKeyJoinTopics(t *testing.T) {
	d := tableJoinDriver(t, 1, func(l, r *KTable) (*KTable, error) {
		return l.JoinForeignKey(r, fkOf, joinedPairs, false, TableJoined{}, Materialized{})
	})
	processAt(t, d, "r", 0, "a", "A", 1)
	processAt(t, d, "l", 0, "k1", "a/1", 2)
	if got := readOut(d); fmt.Sprint(got) != "[k1=k1|a/1|A@2]" {
		t.Fatalf("the join itself: %q", got)
	}
	var reg, resp string
	for _, it := range d.topo.InternalTopics() {
		switch {
		case strings.HasPrefix(it.Name, "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-"):
			reg = it.Name
		case strings.HasPrefix(it.Name, "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-"):
			resp = it.Name
		}
	}
	if reg == "" || resp == "" {
		t.Fatalf("internal topics %+v, want the registration and response topics", d.topo.InternalTopics())
	}
	hash := murmur3Hash128([]byte("a/1"))
	hashBytes := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, hash[0]), hash[1])

	// k1's subscription to a, written again by Kafka Streams (propagateOnlyIfValue): the
	// other table answers, the row resolves it.
	sub := append([]byte{1, byte(propagateOnlyIfValue)}, hashBytes...)
	sub = binary.BigEndian.AppendUint32(append(sub, "k1"...), 0)
	err := d.topo.ProcessInternal(reg, &SourceRecord{Topic: "app-" + reg, Offset: 3, Timestamp: 4, Key: []byte("a"), Value: sub})
	if err != nil {
		t.Fatal(err)
	}
	if got := readOut(d); fmt.Sprint(got) != "[k1=k1|a/1|A@4]" {
		t.Fatalf("after the registration: %q", got)
	}
	// An answer about k1's current value, and one about a value it no longer has.
	answer := append(append([]byte{0}, hashBytes...), "A2"...)
	if err := d.topo.ProcessInternal(resp, &SourceRecord{Topic: "app-" + resp, Offset: 9, Timestamp: 6, Key: []byte("k1"), Value: answer}); err != nil {
		t.Fatal(err)
	}
	stale := murmur3Hash128([]byte("a/0"))
	old := append(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64([]byte{0}, stale[0]), stale[1]), "A0"...)
	if err := d.topo.ProcessInternal(resp, &SourceRecord{Topic: "app-" + resp, Offset: 10, Timestamp: 7, Key: []byte("k1"), Value: old}); err != nil {
		t.Fatal(err)
	}
	// An answer without a hash is about a deleted row; this one exists, so it is stale too.
	if err := d.topo.ProcessInternal(resp, &SourceRecord{Topic: "app-" + resp, Offset: 11, Timestamp: 8, Key: []byte("k1"), Value: []byte{0x80}}); err != nil {
		t.Fatal(err)
	}
	if got := readOut(d); fmt.Sprint(got) != "[k1=k1|a/1|A2@6]" {
		t.Fatalf("after the answers: %q", got)
	}
	for _, bad := range [][]byte{{2, 3}, {1, 9, 0, 0, 0, 0}, append([]byte{1, 3}, hashBytes[:7]...)} {
		err := d.topo.ProcessInternal(reg, &SourceRecord{Topic: "app-" + reg, Key: []byte("a"), Value: bad})
		if err == nil || !strings.Contains(err.Error(), "SubscriptionWrapper") {
			t.Errorf("registration value %x: got %v, want an error naming the layout", bad, err)
		}
	}
	if err := d.topo.ProcessInternal(resp, &SourceRecord{Topic: "app-" + resp, Key: []byte("k1"), Value: []byte{1}}); err == nil {
		t.Error("a response of version 1 was read")
	}
}

// With RepartitionTopics a re-keyed record is written to its repartition topic, named and
// encoded as Kafka Streams writes it (<application.id>-<name>-repartition, the partition
// murmur2 of the key serialised for that topic, key and value in the repartition's serdes,
// the record's timestamp and headers), in the epoch of the record that produced it; read back
// through ProcessInternal it goes where the in-memory route takes it.
func TestRepartitionTopicsWriteKafkaStreamsRecords(t *testing.T) {
	b := newTestBuilder()
	s, err := b.Stream([]string{"in"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.GroupBy(func(rec Record) (any, error) { return rec.Value, nil }, Grouped{Name: "words"})
	if err != nil {
		t.Fatal(err)
	}
	counts, err := g.Count(Materialized{StoreName: "counts", Given: true}, longTestSerde{}, "")
	if err != nil {
		t.Fatal(err)
	}
	out, err := counts.ToStream("")
	if err != nil {
		t.Fatal(err)
	}
	if err := out.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	d, err := NewDriver(b, DriverOptions{Partitions: map[string]int32{"in": 4}, Stores: NewMemoryStores(), ApplicationID: "app", RepartitionTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	in := &SourceRecord{Topic: "in", Partition: 1, Offset: 9, Timestamp: 17, Key: []byte("k"), Value: []byte("fox"), Headers: Headers{{Key: "h", Value: []byte("v")}}}
	if err := d.topo.Process(in); err != nil {
		t.Fatal(err)
	}
	if got := readOut(d); len(got) != 0 {
		t.Fatalf("counted %q before the repartition topic's record was read back", got)
	}
	if len(d.internal) != 1 {
		t.Fatalf("%d records written to internal topics, want 1", len(d.internal))
	}
	w := d.internal[0]
	want := SourceRecord{Topic: "app-words-repartition", Partition: DefaultPartition([]byte("fox"), 4), Timestamp: 17,
		Key: []byte("fox"), Value: []byte("fox"), Headers: in.Headers}
	if fmt.Sprint(w) != fmt.Sprint(want) {
		t.Fatalf("wrote %+v, want %+v", w, want)
	}
	if err := d.processInternal(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.topo.FlushRecordCaches(); err != nil {
		t.Fatal(err)
	}
	if got := readOut(d); fmt.Sprint(got) != "[fox=1@17]" {
		t.Fatalf("counted %q", got)
	}
}

// A foreign-key join's subscriptions and answers are written in Kafka Streams' layouts, the
// ones TestProcessInternalTakesOverForeignKeyJoinTopics reads.
func TestRepartitionTopicsWriteForeignKeyJoinLayouts(t *testing.T) {
	b := newTestBuilder()
	tables := testTables(t, b, "l", "r")
	j, err := tables[0].JoinForeignKey(tables[1], fkOf, joinedPairs, false, TableJoined{}, Materialized{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := j.ToStream("")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores(), ApplicationID: "app", RepartitionTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	processAt(t, d, "r", 0, "a", "A", 1)
	processAt(t, d, "l", 0, "k1", "a/1", 2)
	if len(d.internal) != 1 || !strings.HasSuffix(d.internal[0].Topic, "-topic") {
		t.Fatalf("wrote %+v, want one subscription", d.internal)
	}
	hash := murmur3Hash128([]byte("a/1"))
	hashBytes := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, hash[0]), hash[1])
	sub := binary.BigEndian.AppendUint32(append(append([]byte{1, byte(propagateOnlyIfValue)}, hashBytes...), "k1"...), 0)
	if r := d.internal[0]; string(r.Key) != "a" || !bytes.Equal(r.Value, sub) || r.Timestamp != 2 {
		t.Fatalf("subscription %q=%x@%d, want a=%x@2", r.Key, r.Value, r.Timestamp, sub)
	}
	reg := d.internal[0]
	d.internal = d.internal[1:]
	if err := d.topo.ProcessInternal(d.internalTopics[reg.Topic], &reg); err != nil {
		t.Fatal(err)
	}
	answer := append(append([]byte{0}, hashBytes...), "A"...)
	if len(d.internal) != 1 || string(d.internal[0].Key) != "k1" || !bytes.Equal(d.internal[0].Value, answer) {
		t.Fatalf("wrote %+v, want the answer k1=%x", d.internal, answer)
	}
	if err := d.processInternal(); err != nil {
		t.Fatal(err)
	}
	if got := readOut(d); fmt.Sprint(got) != "[k1=k1|a/1|A@2]" {
		t.Fatalf("joined %q", got)
	}
}

// Through the topics, a KTable groupBy writes what KTableRepartitionMap sends, in
// ChangedSerializer's layout: a row moving to another group as two records, the subtraction
// first, each in the partition of its own group; a row keeping its group as one; each with the
// row's timestamp and headers.
func TestRepartitionTopicsWriteATableGroupBy(t *testing.T) {
	b := newTestBuilder()
	tables := testTables(t, b, "in")
	g, err := tables[0].GroupBy(func(rec Record) (any, any, error) { return rec.Value, rec.Key, nil }, Grouped{})
	if err != nil {
		t.Fatal(err)
	}
	concat := func(sign string) Aggregator {
		return func(rec Record, agg any) (any, error) { return agg.(string) + sign + rec.Value.(string), nil }
	}
	if _, err := g.Reduce(concat("+"), concat("-"), Materialized{}, ""); err != nil {
		t.Fatal(err)
	}
	d, err := NewDriver(b, DriverOptions{Partitions: map[string]int32{"in": 3}, Stores: NewMemoryStores(), ApplicationID: "app", RepartitionTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	h := Headers{{Key: "h", Value: []byte("v")}}
	for i, v := range []string{"g1", "g2", "g2"} {
		if err := d.PipeTo("in", 0, []byte("u1"), []byte(v), int64(5+i), h); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, r := range d.ReadInternal() {
		got = append(got, fmt.Sprintf("%s/%d %s=%q@%d %s", r.Topic, r.Partition, r.Key, r.Value, r.Timestamp, r.Headers[0].Value))
	}
	topic := "app-KTABLE-REDUCE-STATE-STORE-0000000004-repartition"
	p1, p2 := DefaultPartition([]byte("g1"), 3), DefaultPartition([]byte("g2"), 3)
	want := []string{
		fmt.Sprintf("%s/%d g1=%q@5 v", topic, p1, "u1\x01"),
		fmt.Sprintf("%s/%d g1=%q@6 v", topic, p1, "u1\x00"),
		fmt.Sprintf("%s/%d g2=%q@6 v", topic, p2, "u1\x01"),
		fmt.Sprintf("%s/%d g2=%q@7 v", topic, p2, "\x04u1u1\x02"),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("repartition records\n%q, want\n%q", got, want)
	}
}
