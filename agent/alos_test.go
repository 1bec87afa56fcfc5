package agent

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/stoatflow/stoatflow/agent/internal/kfaketest"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
)

// Under at-least-once too the changelog records of an epoch go out while it runs, not all
// at the commit barrier: with a commit a minute away the changelog already holds them, and
// no offset is committed.
func TestChangelogRecordsSentBeforeTheCommitUnderAtLeastOnce(t *testing.T) {
	changelogSentBeforeTheCommitUnderAtLeastOnce(t, onKfake(t, 1, "in", "out"))
}

func changelogSentBeforeTheCommitUnderAtLeastOnce(t *testing.T, b *brokerUnderTest) {
	cfg := changelogSentBeforeTheCommit(t, b, "at_least_once")
	if off := groupOffset(t, b.brokers, cfg.ApplicationID, pipeline.TopicPartition{Topic: b.topic(t, "in")}); off != -1 {
		t.Fatalf("offset %d committed a minute before the commit", off)
	}
}

// Under at-least-once the loop does not wait at the barrier for the acknowledgements of the
// epoch's outputs: with the broker holding every output, the barrier passes and the next
// records are processed; no offset is committed until the outputs are acknowledged. The
// output's leader is not the changelog's, whose records the barrier does wait for.
func TestAtLeastOnceBarrierDoesNotWaitForTheOutputs(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(1, "in", "out"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	// A barrier every 2 s leaves the second records time to be processed before the next
	// barrier, which waits for the first one's offsets.
	cfg := testConfig(t, brokers, countScript, "processing.guarantee = \"at_least_once\"\ncommit.interval.ms = 2000\n")
	changelog := pipeline.ChangelogTopic(cfg.ApplicationID, "counts")
	if err := kafkaio.EnsureTopics(brokers, saramaTestConfig(), map[string]kafkaio.TopicSpec{changelog: {Partitions: 1, ReplicationFactor: -1}}); err != nil {
		t.Fatal(err)
	}
	if err := cluster.MoveTopicPartition("out", 0, 1-cluster.LeaderFor(changelog, 0)); err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	ra := startAgentWith(t, cfg, m)
	defer ra.stop(t)
	release, held := kfaketest.HoldProduce(cluster, "out")
	defer release() // before the stop, which waits for the acknowledgements
	in := pipeline.TopicPartition{Topic: "in"}

	produceKeys(t, brokers, 1, 5, 5, 0, "v")
	<-held
	pollFor(t, 20*time.Second, "a barrier to pass while the outputs are unacknowledged", func() bool {
		return histogramCount(t, m.CommitLatency) >= 1
	})
	produceKeys(t, brokers, 1, 5, 5, 5, "v")
	pollFor(t, 20*time.Second, "the records after the barrier to be processed", func() bool {
		return testutil.ToFloat64(m.RecordsConsumed.WithLabelValues("in")) >= 10
	})
	if off := groupOffset(t, brokers, cfg.ApplicationID, in); off != -1 {
		t.Fatalf("offset %d committed while the outputs are unacknowledged", off)
	}
	release()
	pollFor(t, 20*time.Second, "the offsets committed after the acknowledgements", func() bool {
		return groupOffset(t, brokers, cfg.ApplicationID, in) == 10
	})
}

// histogramCount is how many observations h has.
func histogramCount(t *testing.T, h prometheus.Histogram) uint64 {
	t.Helper()
	var d dto.Metric
	if err := h.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetHistogram().GetSampleCount()
}
