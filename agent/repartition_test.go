package agent

import (
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Through the repartition topics (the path of a streams group's agents), an exactly-once
// word count on two workers counts every word exactly once: each word is written to
// <application.id>-counts-repartition, keyed by itself, in the partition Kafka Streams
// writes it to, inside the epoch's transaction (read_committed sees each once), and the
// counting sub-topology's tasks read it back from there.
func TestRepartitionThroughTopics(t *testing.T) {
	repartitionThroughTopics(t, onKfake(t, 4, "in", "out"))
}

func repartitionThroughTopics(t *testing.T, b *brokerUnderTest) {
	cfg := b.config(t, wordCountScript, `processing.guarantee = "exactly_once_v2"
num.stream.threads = 2
statestore.cache.max.bytes = 0`)
	repartition := cfg.ApplicationID + "-counts-repartition"
	b.create(t, repartition, 4, nil)
	ra := startAgentMade(t, cfg, nil, func(a *Agent) { a.repartitionTopics = true }, StateRunning)
	defer ra.stop(t)
	want := produceLinesTo(t, b.brokers, b.topic(t, "in"), 4, 600, 0)
	b.checkExactCounts(t, want)

	var total int64
	for _, n := range want {
		total += n
	}
	got := map[string]int64{}
	ch := consumeAll(t, b.brokers, repartition, readCommittedConfig())
	deadline := time.After(time.Minute)
	for read := int64(0); read < total; read++ {
		select {
		case m := <-ch:
			if string(m.Key) != string(m.Value) {
				t.Fatalf("%s-%d@%d: key %q, value %q, want the word as both", m.Topic, m.Partition, m.Offset, m.Key, m.Value)
			}
			if p := pipeline.DefaultPartition(m.Key, 4); m.Partition != p {
				t.Fatalf("%q in partition %d, Kafka Streams writes it to %d", m.Key, m.Partition, p)
			}
			got[string(m.Key)]++
		case <-deadline:
			t.Fatalf("read %d of the %d words from %s", read, total, repartition)
		}
	}
	for w, n := range want {
		if got[w] != n {
			t.Errorf("%s holds %q %d times, want %d", repartition, w, got[w], n)
		}
	}
}
