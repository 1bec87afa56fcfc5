package kafkaio

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// changelogWithAbort writes three transactions to partition 0 of topic: committed,
// aborted, committed. Offsets: c0 c1 c2 (0-2), marker 3, a0 a1 a2 (4-6), marker 7, c3 c4
// (8-9), marker 10.
func changelogWithAbort(t *testing.T, topic string, p *Producer) {
	t.Helper()
	for _, txn := range []struct {
		values []string
		commit bool
	}{
		{[]string{"c0", "c1", "c2"}, true},
		{[]string{"a0", "a1", "a2"}, false},
		{[]string{"c3", "c4"}, true},
	} {
		if err := p.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		sendValues(t, p, topic, 0, txn.values...)
		var err error
		if txn.commit {
			err = p.CommitTxn(t.Context(), nil, "")
		} else if err = p.Flush(t.Context()); err == nil {
			err = p.AbortTxn()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadToEndSkipsAbortedTransactions(t *testing.T) {
	readToEndSkipsAbortedTransactions(t, startBroker(t))
}

func readToEndSkipsAbortedTransactions(t *testing.T, e testCluster) {
	rc := kafkatest.Name(t, "rc")
	createTopic(t, e, rc, 2)
	p := newTxnProducer(t, e, kafkatest.Name(t, "restore"))
	changelogWithAbort(t, rc, p)

	// An open transaction holds the end (last stable offset) at its first record.
	if err := p.BeginTxn(); err != nil {
		t.Fatal(err)
	}
	sendValues(t, p, rc, 0, "open0", "open1")
	if err := p.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	tp := pipeline.TopicPartition{Topic: rc, Partition: 0}
	ends, err := newTopicReader(t, e.Addrs(), testConfig()).EndOffsets(t.Context(), []pipeline.TopicPartition{tp, {Topic: rc, Partition: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[pipeline.TopicPartition]int64{tp: 11, {Topic: rc, Partition: 1}: 0}; !reflect.DeepEqual(ends, want) {
		t.Fatalf("EndOffsets with an open transaction = %v, want %v", ends, want)
	}

	for _, tc := range []struct {
		from     int64
		want     []string
		wantLast int64
	}{
		{0, []string{"0:c0", "1:c1", "2:c2", "8:c3", "9:c4"}, 9},
		{-3, []string{"0:c0", "1:c1", "2:c2", "8:c3", "9:c4"}, 9},
		{1, []string{"1:c1", "2:c2", "8:c3", "9:c4"}, 9}, // inside the first batch
		{3, []string{"8:c3", "9:c4"}, 9},                 // at a marker
		{5, []string{"8:c3", "9:c4"}, 9},                 // inside the aborted transaction
		{10, nil, 9},                                     // only the last marker is left
		{11, nil, 10},                                    // at the end
	} {
		got, last := readValues(t, e, rc, 0, tc.from)
		if !reflect.DeepEqual(got, tc.want) || last != tc.wantLast {
			t.Errorf("ReadToEnd from %d = %v, last %d; want %v, last %d", tc.from, got, last, tc.want, tc.wantLast)
		}
	}

	if err := p.CommitTxn(t.Context(), nil, ""); err != nil {
		t.Fatal(err)
	}
	got, last := valuesAfterTheCommit(t, e, rc, 0, 10)
	if want := []string{"11:open0", "12:open1"}; !reflect.DeepEqual(got, want) || last != 12 {
		t.Errorf("after the commit ReadToEnd from 10 = %v, last %d; want %v, last 12", got, last, want)
	}
}

func TestReadToEndEmptyPartition(t *testing.T) {
	readToEndEmptyPartition(t, startBroker(t))
}

func readToEndEmptyPartition(t *testing.T, e testCluster) {
	empty := kafkatest.Name(t, "empty")
	createTopic(t, e, empty, 1)
	for _, from := range []int64{-1, 0, 4} {
		last, err := newTopicReader(t, e.Addrs(), testConfig()).ReadToEnd(t.Context(), empty, 0, from, func([]pipeline.SourceRecord) error {
			t.Fatal("fn called for an empty partition")
			return nil
		})
		if err != nil {
			t.Fatalf("ReadToEnd from %d: %v", from, err)
		}
		if want := max(from, 0) - 1; last != want {
			t.Errorf("ReadToEnd from %d: last %d, want %d", from, last, want)
		}
	}
}

// Many small fetches: every record arrives once, in order, with its key, value,
// headers and timestamp.
func TestReadToEndManyFetches(t *testing.T) {
	readToEndManyFetches(t, startBroker(t))
}

func readToEndManyFetches(t *testing.T, e testCluster) {
	many := kafkatest.Name(t, "many")
	createTopic(t, e, many, 1)
	const n = 2000
	// Batches of at most 20 records: a batch is never split across fetches, and records
	// sent faster than they are acknowledged would otherwise share a few large ones.
	small := testConfig()
	small.Producer.Flush.MaxMessages = 20
	produceNWith(t, e, small, many, 0, 0, n)
	cfg := testConfig()
	cfg.Consumer.Fetch.Default = 1024
	var got []pipeline.SourceRecord
	calls := 0
	last, err := newTopicReader(t, e.Addrs(), cfg).ReadToEnd(t.Context(), many, 0, 0, func(msgs []pipeline.SourceRecord) error {
		calls++
		got = append(got, msgs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if last != n-1 || len(got) != n {
		t.Fatalf("last %d and %d records, want %d and %d", last, len(got), n-1, n)
	}
	if calls < 2 {
		t.Errorf("fn called %d times, want several fetches with Fetch.Default 1 KiB", calls)
	}
	for i, m := range got {
		if m.Offset != int64(i) || string(m.Key) != fmt.Sprintf("key-%d", i) || string(m.Value) != fmt.Sprintf("value-%d", i) || m.Timestamp != int64(i) {
			t.Fatalf("record %d = offset %d %q=%q at %d", i, m.Offset, m.Key, m.Value, m.Timestamp)
		}
	}
}

func TestReadToEndErrors(t *testing.T) {
	readToEndErrors(t, startBroker(t))
}

func readToEndErrors(t *testing.T, e testCluster) {
	fail, absent := kafkatest.Name(t, "fail"), kafkatest.Name(t, "absent")
	createTopic(t, e, fail, 1)
	produceN(t, e, fail, 0, 0, 3)
	boom := errors.New("boom")
	last, err := newTopicReader(t, e.Addrs(), testConfig()).ReadToEnd(t.Context(), fail, 0, 0, func([]pipeline.SourceRecord) error { return boom })
	if !errors.Is(err, boom) || last != -1 {
		t.Errorf("ReadToEnd with a failing fn = %d, %v; want -1 and the fn's error", last, err)
	}
	if _, err := newTopicReader(t, e.Addrs(), testConfig()).ReadToEnd(t.Context(), absent, 0, 0, func([]pipeline.SourceRecord) error { return nil }); err == nil {
		t.Error("ReadToEnd of a missing topic: want an error")
	}
	if _, err := newTopicReader(t, e.Addrs(), testConfig()).ReadToEnd(t.Context(), fail, 0, 0, nil); err == nil {
		t.Error("ReadToEnd with a nil fn: want an error")
	}
	old := testConfig()
	old.Version = sarama.V0_10_2_0
	if _, err := NewTopicReader(e.Addrs(), old); err == nil {
		t.Error("a topic reader before Kafka 0.11: want an error")
	}
	if _, err := newTopicReader(t, e.Addrs(), testConfig()).EndOffsets(t.Context(), []pipeline.TopicPartition{{Topic: absent, Partition: 0}}); err == nil {
		t.Error("EndOffsets of a missing topic: want an error")
	}
}

func TestCommittedReaderEdgeCases(t *testing.T) {
	r := &committedReader{topic: "t", partition: 0, next: 5}
	partialFirst := &sarama.FetchResponseBlock{RecordsSet: []*sarama.Records{
		{RecordBatch: &sarama.RecordBatch{FirstOffset: 5, PartialTrailingRecord: true}},
	}}
	if msgs, partial, err := r.read(partialFirst); err != nil || !partial || len(msgs) != 0 || r.next != 5 {
		t.Errorf("incomplete first batch: %v, partial %v, %v, next %d; want partial and next 5", msgs, partial, err, r.next)
	}
	legacy := &sarama.FetchResponseBlock{RecordsSet: []*sarama.Records{{MsgSet: &sarama.MessageSet{}}}}
	if _, _, err := r.read(legacy); err == nil {
		t.Error("legacy message set: want a not-supported error")
	}
	badMarker := &sarama.FetchResponseBlock{RecordsSet: []*sarama.Records{
		{RecordBatch: &sarama.RecordBatch{FirstOffset: 5, Control: true, Records: []*sarama.Record{{Key: []byte{0}}}}},
	}}
	if _, _, err := r.read(badMarker); err == nil {
		t.Error("control batch with a short key: want an error")
	}
}
