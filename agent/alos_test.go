package agent

import (
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Under at-least-once too the changelog records of an epoch go out while it runs, not all
// at the commit barrier: with a commit a minute away the changelog already holds them, and
// no offset is committed.
func TestChangelogRecordsSentBeforeTheCommitUnderAtLeastOnce(t *testing.T) {
	brokers := testBroker(t, 1, "in", "out")
	cfg := testConfig(t, brokers, countScript, "processing.guarantee = \"at_least_once\"\ncommit.interval.ms = 60000\n")
	ra := startAgent(t, cfg)
	defer ra.stop(t)
	produceKeys(t, brokers, 1, 20, 20, 0, "v")
	changelog := pipeline.ChangelogTopic(cfg.ApplicationID, "counts")
	sent := consumeAll(t, brokers, changelog, saramaTestConfig())
	seen := map[string]bool{}
	deadline := time.After(20 * time.Second)
	for len(seen) < 20 {
		select {
		case m := <-sent:
			seen[string(m.Key)] = true
		case <-deadline:
			t.Fatalf("%d of 20 changelog records sent before the commit", len(seen))
		}
	}
	if off := groupOffset(t, brokers, cfg.ApplicationID, pipeline.TopicPartition{Topic: "in"}); off != -1 {
		t.Fatalf("offset %d committed a minute before the commit", off)
	}
}
