package kafkaio

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
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
	e := startBroker(t)
	for _, topic := range []string{"r-earliest", "r-latest", "r-duration"} {
		createTopic(t, e, topic, 1)
	}
	now := time.Now().UnixMilli()
	old, recent := now-2*time.Hour.Milliseconds(), now-time.Minute.Milliseconds()
	sendAt(t, e, "r-earliest", 0, old, old)
	sendAt(t, e, "r-latest", 0, recent, recent, recent)
	sendAt(t, e, "r-duration", 0, old, old, old, recent, recent)
	policies := map[string]pipeline.OffsetReset{
		"r-latest":   {Strategy: pipeline.ResetLatest},
		"r-duration": {Strategy: pipeline.ResetByDuration, Duration: time.Hour.Milliseconds()},
	}
	topics := []string{"r-duration", "r-earliest", "r-latest"}
	start := func() (*Consumer, *recorder) {
		r := &recorder{}
		c := newTestConsumer(t, e, "reset-group", topics, testConfig(), r)
		c.SetOffsetReset(func(topic string) pipeline.OffsetReset { return policies[topic] })
		c.Start(t.Context())
		eventually(t, 30*time.Second, "an assignment", func() bool { return r.generation.Load() > 0 })
		return c, r
	}
	c, _ := start()
	sendAt(t, e, "r-latest", 3, now, now)
	got := received(receive(t, c, 6))
	want := []string{"r-duration@3", "r-duration@4", "r-earliest@0", "r-earliest@1", "r-latest@3", "r-latest@4"}
	if !slices.Equal(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
	if err := c.Commit(map[pipeline.TopicPartition]int64{{Topic: "r-latest", Partition: 0}: 4}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(true); err != nil {
		t.Fatal(err)
	}

	c, _ = start()
	got = received(receive(t, c, 5))
	want = []string{"r-duration@3", "r-duration@4", "r-earliest@0", "r-earliest@1", "r-latest@4"}
	if !slices.Equal(got, want) {
		t.Fatalf("after a commit of r-latest-0 at 4: received %v, want %v", got, want)
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
	e := startBroker(t)
	createTopic(t, e, "r-none", 1)
	sendAt(t, e, "r-none", 0, 1)
	c := newTestConsumer(t, e, "none-group", []string{"r-none"}, testConfig(), &recorder{})
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
	if !errors.Is(err, ErrNoOffset) || !strings.Contains(err.Error(), "r-none-0") {
		t.Fatalf("FailedErr = %v, want ErrNoOffset naming r-none-0", err)
	}
}
