//go:build kafka

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// The harness on both brokers: the scenarios on kfake and on an Apache Kafka node of its own
// (not the shared test cluster: it deletes every topic between runs), and Kafka Streams 4.4's
// word count built and run beside the agent's and goka's. -verify checks every word count's
// output, read read_committed, count by count: the Kafka Streams app counts as the agent does.
func TestKafkaBenchRunsOnBothBrokersWithKafkaStreams(t *testing.T) {
	kafkatest.Require(t)
	out := filepath.Join(t.TempDir(), "RESULTS.md")
	var stdout bytes.Buffer
	err := run([]string{"-brokers", "kfake,kafka", "-records", "3000", "-runs", "1", "-verify",
		"-scenarios", "ceiling,wordcount,wordcount-alos,goka-wordcount,ks-wordcount,ks-wordcount-alos",
		"-latency-time", "300ms", "-idle-settle", "10ms", "-out", out}, &stdout)
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	md := string(body)
	_, ks, _ := strings.Cut(md, "## Word count: Kafka Streams 4.4, StoatFlow and goka on Apache Kafka (issue 29)")
	ks, _, _ = strings.Cut(ks, "\n## ")
	for _, want := range []string{
		"## kfake and Apache Kafka 4.4 side by side (issue 28)",
		"| ceiling: raw sarama consume → produce | ", "| word count at-least-once (same script and stores) | ",
		"## On Apache Kafka 4.4 (one node)", "| Kafka Streams 4.4 word count, exactly-once v2 (the same [streams] config) | ",
		"- Kafka Streams 4.4.0 (bench/kstreams",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("results lack %q:\n%s", want, md)
		}
	}
	for _, row := range kstreamsRows {
		line := ""
		for _, l := range strings.Split(ks, "\n") {
			if strings.HasPrefix(l, "| "+row.what+" | ") {
				line = l
			}
		}
		// Every process said when it was running, and every figure is there.
		if line == "" || strings.Contains(line, "n/a") || strings.Contains(line, "| |") {
			t.Errorf("%s: %q\n%s", row.what, line, ks)
		}
	}
	if strings.Contains(md, "failed: ") {
		t.Errorf("a scenario failed:\n%s", md)
	}
}
