package kafkaio

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// sendAt sends records value-<from>.. to partition 0 of topic with the given timestamps.
func sendAt(t *testing.T, e testCluster, topic string, from int, timestamps ...int64) {
	t.Helper()
	prod, err := NewProducer(e.Addrs(), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i, ts := range timestamps {
		if err := prod.Send(topic, 0, nil, fmt.Appendf(nil, "value-%d", from+i), nil, ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := prod.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// Partitions without a committed offset start where their topic's policy says: the log
// start, the log end, or the first record at most the duration old (found by timestamp);
// a committed offset wins over every policy.
func TestOffsetResetPolicies(t *testing.T) {
	offsetResetPolicies(t, startBroker(t))
}

func offsetResetPolicies(t *testing.T, e testCluster) {
	earliest, latest, duration := kafkatest.Name(t, "r-earliest"), kafkatest.Name(t, "r-latest"), kafkatest.Name(t, "r-duration")
	for _, topic := range []string{earliest, latest, duration} {
		createTopic(t, e, topic, 1)
	}
	now := time.Now().UnixMilli()
	old, recent := now-2*time.Hour.Milliseconds(), now-time.Minute.Milliseconds()
	sendAt(t, e, earliest, 0, old, old)
	sendAt(t, e, latest, 0, recent, recent, recent)
	sendAt(t, e, duration, 0, old, old, old, recent, recent)
	policies := map[string]pipeline.OffsetReset{
		latest:   {Strategy: pipeline.ResetLatest},
		duration: {Strategy: pipeline.ResetByDuration, Duration: time.Hour.Milliseconds()},
	}
	topics := []string{duration, earliest, latest}
	group := kafkatest.Name(t, "reset-group")
	start := func() (*Consumer, *recorder) {
		r := &recorder{}
		c := newTestConsumer(t, e, group, topics, testConfig(), r)
		c.SetOffsetReset(func(topic string) pipeline.OffsetReset { return policies[topic] })
		c.Start(t.Context())
		eventually(t, 30*time.Second, "an assignment", func() bool { return r.generation.Load() > 0 })
		return c, r
	}
	at := func(topic string, offsets ...int) []string {
		var out []string
		for _, o := range offsets {
			out = append(out, fmt.Sprintf("%s@%d", topic, o))
		}
		return out
	}
	c, _ := start()
	sendAt(t, e, latest, 3, now, now)
	got := received(receive(t, c, 6))
	want := slices.Sorted(slices.Values(slices.Concat(at(duration, 3, 4), at(earliest, 0, 1), at(latest, 3, 4))))
	if !slices.Equal(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
	if err := c.Commit(map[pipeline.TopicPartition]int64{{Topic: latest, Partition: 0}: 4}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(true); err != nil {
		t.Fatal(err)
	}

	c, _ = start()
	got = received(receive(t, c, 5))
	want = slices.Sorted(slices.Values(slices.Concat(at(duration, 3, 4), at(earliest, 0, 1), at(latest, 4))))
	if !slices.Equal(got, want) {
		t.Fatalf("after a commit of %s-0 at 4: received %v, want %v", latest, got, want)
	}
}

func received(msgs []pipeline.SourceRecord) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = fmt.Sprintf("%s@%d", m.Topic, m.Offset)
	}
	slices.Sort(out)
	return out
}

// A partition without a committed offset whose policy is none stops the member, naming
// the topic-partition, as Kafka's NoOffsetForPartitionException stops a stream thread.
func TestOffsetResetNoneFails(t *testing.T) {
	offsetResetNoneFails(t, startBroker(t))
}

func offsetResetNoneFails(t *testing.T, e testCluster) {
	none := kafkatest.Name(t, "r-none")
	createTopic(t, e, none, 1)
	sendAt(t, e, none, 0, 1)
	c := newTestConsumer(t, e, kafkatest.Name(t, "none-group"), []string{none}, testConfig(), &recorder{})
	c.SetOffsetReset(func(string) pipeline.OffsetReset { return pipeline.OffsetReset{Strategy: pipeline.ResetNone} })
	c.Start(t.Context())
	select {
	case <-c.Failed():
	case m := <-c.Messages():
		t.Fatalf("delivered %v from a partition without a committed offset and policy none", m)
	case <-time.After(30 * time.Second):
		t.Fatal("the member did not fail")
	}
	err := c.FailedErr()
	if !errors.Is(err, ErrNoOffset) || !strings.Contains(err.Error(), none+"-0") {
		t.Fatalf("FailedErr = %v, want ErrNoOffset naming %s-0", err, none)
	}
}
