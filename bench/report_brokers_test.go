package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/bench/internal/childproc"
)

// twoBrokerReport is a run of the word counts on both brokers and of Kafka Streams on Apache
// Kafka, 1,000,000 records, two rounds.
func twoBrokerReport(t *testing.T) *report {
	t.Helper()
	res := func(name, broker string, runs ...runResult) scenarioResult {
		sc, err := scenarioNamed(name)
		if err != nil {
			t.Fatal(err)
		}
		return scenarioResult{sc: sc, broker: broker, runs: runs}
	}
	// run: elapsed seconds, CPU seconds, peak MiB, seconds to RUNNING, CPU seconds then.
	run := func(s, cpu float64, peak int64, toRunning, cpuToRunning float64) runResult {
		return runResult{elapsed: time.Duration(s * float64(time.Second)),
			stats:     childproc.Stats{CPUSeconds: cpu, PeakRSSBytes: peak * mib},
			toRunning: time.Duration(toRunning * float64(time.Second)), cpuToRunning: cpuToRunning}
	}
	return &report{
		opts:    options{records: 1_000_000, runs: 2},
		brokers: []string{brokerKfake, apacheKafka},
		results: []scenarioResult{
			// Round 2 is slower for everything: each round's ratio is the same.
			res("wordcount", brokerKfake, run(10, 14, 90, 1, 0.1), run(20, 14, 94, 1, 0.1)),
			res("wordcount", apacheKafka, run(20, 16, 100, 1.5, 0.2), run(40, 16, 100, 1.5, 0.2)),
			res("wordcount-alos", brokerKfake, run(8, 10, 80, 1, 0.1), run(16, 10, 80, 1, 0.1)),
			{sc: scenarios[0], broker: apacheKafka, failed: errors.New("run 1: boom | bang")},
			res("wordcount-alos", apacheKafka, run(16, 12, 90, 1, 0.1), run(32, 12, 90, 1, 0.1)),
			res("ks-wordcount", apacheKafka, run(40, 40, 400, 5, 4), run(80, 40, 420, 6, 4)),
			res("ks-wordcount-alos", apacheKafka, run(32, 30, 380, 5, 4), run(64, 30, 380, 5, 4)),
		},
		idles:       map[string]idleResult{brokerKfake: {stats: childproc.Stats{RSSBytes: 30 * mib}}, apacheKafka: {err: errors.New("no broker")}},
		javaVersion: `openjdk version "17.0.15" 2025-04-15`,
	}
}

func TestReportOnOneBroker(t *testing.T) {
	rep := twoBrokerReport(t)
	kf, ak := rep.on(brokerKfake), rep.on(apacheKafka)
	if len(kf.results) != 2 || len(ak.results) != 5 {
		t.Fatalf("kfake %d results, Apache Kafka %d", len(kf.results), len(ak.results))
	}
	r, ok := ak.result("wordcount")
	if !ok || r.broker != apacheKafka {
		t.Fatalf("Apache Kafka's word count: %+v", r)
	}
	if kf.idle == nil || kf.idle.RSSBytes != 30*mib || kf.idleErr != nil || ak.idle != nil || ak.idleErr == nil {
		t.Errorf("idle agents: kfake %v %v, Apache Kafka %v %v", kf.idle, kf.idleErr, ak.idle, ak.idleErr)
	}
	if !rep.failedOn(apacheKafka) || rep.failedOn(brokerKfake) {
		t.Error("failedOn names the wrong broker")
	}
}

func TestBrokerTableComparesRoundByRound(t *testing.T) {
	table := twoBrokerReport(t).brokerTable()
	for _, want := range []string{
		"| records/s on kfake | records/s on Apache Kafka | Apache Kafka / kfake |",
		"| word count: flatMapValues → groupBy → count → to, exactly-once v2, transactional stores | 75,000 (50,000 – 100,000) | 37,500 (25,000 – 50,000) | 0.50× | 14.00 / 16.00 | 92 / 100 MiB |\n",
		"| word count at-least-once (same script and stores) | 93,750 (62,500 – 125,000) | 46,875 (31,250 – 62,500) | 0.50× | 10.00 / 12.00 | 80 / 90 MiB |\n",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	// Kafka Streams ran on one broker only: it has a table of its own. The ceiling failed on
	// Apache Kafka and did not run on kfake.
	if strings.Contains(table, "Kafka Streams") || strings.Contains(table, "ceiling") {
		t.Errorf("a scenario of one broker is in the table:\n%s", table)
	}
	one := twoBrokerReport(t)
	one.brokers = []string{brokerKfake}
	if got := one.brokerTable(); got != "" {
		t.Errorf("one broker: %q", got)
	}
}

func TestKStreamsTable(t *testing.T) {
	table := twoBrokerReport(t).kstreamsTable()
	for _, want := range []string{
		"## Word count: Kafka Streams 4.4, StoatFlow and goka on Apache Kafka (issue 29)",
		`Kafka Streams runs on openjdk version "17.0.15" 2025-04-15 with -Xmx1g -XX:+UseG1GC;`,
		"| Kafka Streams 4.4, exactly_once_v2 | 18,750 (12,500 – 25,000) | 1.00× | 40.00 | 1.00× | 36.00 | 410 MiB (400 MiB – 420 MiB) | 5.5 s (5.0 s – 6.0 s) | 4.00 |\n",
		"| StoatFlow, exactly_once_v2 | 37,500 (25,000 – 50,000) | 2.00× | 16.00 | 0.40× | 15.80 | 100 MiB | 1.5 s | 0.20 |\n",
		"| StoatFlow, at_least_once | 46,875 (31,250 – 62,500) | 2.00× | 12.00 | 0.40× | 11.90 | 90 MiB | 1.0 s | 0.10 |\n",
		"| goka, at-least-once (it has no exactly-once) | not measured (scenario not run) | | | | | | | |\n",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	rep := twoBrokerReport(t)
	rep.results = rep.results[:3]
	if got := rep.kstreamsTable(); got != "" {
		t.Errorf("without Kafka Streams: %q", got)
	}
}

// RESULTS.md of a run on both brokers: the two side-by-side tables, then each broker's
// sections, and how the brokers and Kafka Streams were set up.
func TestMarkdownOfTwoBrokers(t *testing.T) {
	md := twoBrokerReport(t).markdown()
	var at []int
	for _, want := range []string{
		"- brokers: kfake (in process); Apache Kafka 4.4 (one node) (how each is set up: at the end)\n",
		"## kfake and Apache Kafka 4.4 side by side (issue 28)",
		"## Word count: Kafka Streams 4.4, StoatFlow and goka on Apache Kafka (issue 29)",
		"## On kfake (in process)\n\n| scenario | records/s |",
		"| RSS ≤ 64 MiB idle (word count agent, RUNNING, no input) | 30 MiB | yes |",
		"## On Apache Kafka 4.4 (one node)\n\n| scenario | records/s |",
		"| ceiling: raw sarama consume → produce | failed: run 1: boom \\| bang |",
		"| RSS ≤ 64 MiB idle | failed: no broker | n/a |",
		"## How it is measured",
		"- Apache Kafka 4.4.0 runs as one combined broker and controller node",
		"-Xms1g -Xmx1g -XX:+UseG1GC",
		"- Kafka Streams 4.4.0 (bench/kstreams",
	} {
		i := strings.Index(md, want)
		if i < 0 {
			t.Errorf("RESULTS.md lacks %q:\n%s", want, md)
			continue
		}
		at = append(at, i)
	}
	for i := 1; i < len(at); i++ {
		if at[i] < at[i-1] {
			t.Errorf("RESULTS.md's parts are out of order:\n%s", md)
			break
		}
	}
	if strings.Count(md, "### Targets (issue 8)") != 2 {
		t.Errorf("not one set of targets per broker:\n%s", md)
	}
}
