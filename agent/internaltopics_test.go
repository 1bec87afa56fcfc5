package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// The changelog topics of every store kind are created as Kafka Streams 4.4 creates them
// (InternalTopicManager with InternalTopicConfig's subclasses): each with
// message.timestamp.type CreateTime; key-value stores compacted; window and session stores
// compacted and deleted, retention.ms their retention plus
// windowstore.changelog.additional.retention.ms; versioned stores compacted, with
// min.compaction.lag.ms their history retention plus a day (the store's own topic settings
// over those: TestChangelogTopicsTakeTheStoresTopicSettings).
func TestChangelogTopicsAsKafkaStreamsCreatesThem(t *testing.T) {
	changelogTopicsAsKafkaStreams(t, onKfake(t, 1, "in", "out"), -1)
}

// changelogTopicsAsKafkaStreams runs storeKindsScript with replication.factor replication
// and checks its changelog topics' configs and replication (-1: the broker's default).
func changelogTopicsAsKafkaStreams(t *testing.T, b *brokerUnderTest, replication int) {
	extra := "windowstore.changelog.additional.retention.ms = 60000\n"
	if replication > 0 {
		extra += fmt.Sprintf("replication.factor = %d\n", replication)
	}
	cfg := b.config(t, storeKindsScript, extra)
	ra := startAgent(t, cfg)
	defer ra.stop(t)
	windowed := map[string]string{"message.timestamp.type": "CreateTime", "cleanup.policy": "compact,delete", "retention.ms": "3660000"}
	want := map[string]map[string]string{
		"win":  windowed,
		"hwin": windowed,
		"ses":  windowed,
		"ver":  {"message.timestamp.type": "CreateTime", "cleanup.policy": "compact", "min.compaction.lag.ms": "90000000"},
		"hkv":  {"message.timestamp.type": "CreateTime", "cleanup.policy": "compact"},
	}
	admin, err := sarama.NewClusterAdmin(b.brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	wantReplicas := replication
	if replication < 0 {
		wantReplicas = b.nodes
	}
	for store, settings := range want {
		topic := pipeline.ChangelogTopic(cfg.ApplicationID, store)
		described, err := admin.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.TopicResource, Name: topic}}, sarama.DescribeConfigsOptions{})
		if err != nil || len(described) != 1 || described[0].ErrorCode != sarama.ErrNoError {
			t.Fatalf("describe the configs of %s: %v %v", topic, described, err)
		}
		entries := described[0].Configs
		// Set on the topic, not the broker's defaults: a broker whose
		// log.message.timestamp.type is LogAppendTime must not give it to a changelog.
		got := map[string]string{}
		for _, e := range entries {
			if _, ok := settings[e.Name]; ok && e.Source == sarama.SourceTopic {
				got[e.Name] = e.Value
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(settings) {
			t.Errorf("%s: %v, want %v", topic, got, settings)
		}
		metas, err := admin.DescribeTopics([]string{topic})
		if err != nil || len(metas) != 1 || metas[0].Err != sarama.ErrNoError {
			t.Fatalf("describe %s: %v %v", topic, metas, err)
		}
		for _, p := range metas[0].Partitions {
			if len(p.Replicas) != wantReplicas {
				t.Errorf("%s-%d: replicas %v, want %d", topic, p.ID, p.Replicas, wantReplicas)
			}
		}
	}
}

// A changelog topic that exists with another partition count than the application's
// tasks is refused with Kafka Streams' error (InternalTopicManager) at the start, before
// anything is processed (a start-up failure: NOT_RUNNING, as a missing source topic): its
// partitions would not hold the state of the tasks of the same number.
func TestExistingChangelogOfOtherPartitionsIsRefused(t *testing.T) {
	existingChangelogOfOtherPartitionsIsRefused(t, onKfake(t, 2, "in", "out"))
}

func existingChangelogOfOtherPartitionsIsRefused(t *testing.T, b *brokerUnderTest) {
	cfg := b.config(t, countScript, "")
	changelog := pipeline.ChangelogTopic(cfg.ApplicationID, "counts")
	b.create(t, changelog, 3, map[string]string{"cleanup.policy": "compact"})
	a, err := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = a.Run(ctx)
	want := fmt.Sprintf("Existing internal topic %s has invalid partitions: expected: 2; actual: 3. "+
		"Use 'org.apache.kafka.tools.StreamsResetter' tool to clean up invalid topics before processing.", changelog)
	if err == nil || !strings.Contains(err.Error(), want) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v, want Kafka Streams' error %q", err, want)
	}
	if st := a.State(); st != StateNotRunning {
		t.Fatalf("state %s, want NOT_RUNNING", st)
	}
}
