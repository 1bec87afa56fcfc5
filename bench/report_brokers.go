package main

import (
	"fmt"
	"strings"

	"github.com/stoatflow/stoatflow/bench/internal/childproc"
)

// idleResult is the idle word count agent's resident set on one broker.
type idleResult struct {
	stats childproc.Stats
	err   error
}

// on is the report of one broker's runs: its results, its idle agent.
func (rep *report) on(broker string) *report {
	v := *rep
	v.results = nil
	for _, r := range rep.results {
		if r.broker == broker {
			v.results = append(v.results, r)
		}
	}
	v.idle, v.idleErr = nil, nil
	if idle, ok := rep.idles[broker]; ok {
		if idle.err != nil {
			v.idleErr = idle.err
		} else {
			v.idle = &idle.stats
		}
	}
	return &v
}

// failedOn says whether a scenario failed on the broker: its log is then worth keeping.
func (rep *report) failedOn(broker string) bool {
	for _, r := range rep.results {
		if r.broker == broker && r.failed != nil {
			return true
		}
	}
	return false
}

// brokersLine names the brokers of the run in RESULTS.md's header.
func (rep *report) brokersLine() string {
	var names []string
	for _, b := range rep.brokers {
		names = append(names, brokerLabels[b])
	}
	return fmt.Sprintf("- brokers: %s (how each is set up: at the end)\n", strings.Join(names, "; "))
}

// roundRatio compares a's records/s with b's round by round: the i-th runs of both met the
// same phase of the machine.
func roundRatio(a, b scenarioResult, records int) spread {
	var v []float64
	for i := range min(len(a.runs), len(b.runs)) {
		v = append(v, a.runs[i].recordsPerSec(records)/b.runs[i].recordsPerSec(records))
	}
	return spreadOf(v)
}

// cpuPerMOf is a result's CPU seconds per million input records, as a spread of its runs.
func (rep *report) cpuPerMOf(r scenarioResult) spread {
	return r.spreadOf(func(x runResult) float64 { return x.stats.CPUSeconds / float64(rep.opts.records) * 1e6 })
}

// why is what a row shows of a result without runs.
func why(r scenarioResult) string {
	switch {
	case r.unsupported != "":
		return oneLine(r.unsupported)
	case r.failed != nil:
		return "failed: " + oneLine(r.failed.Error())
	}
	return "not measured"
}

// brokerTable shows every scenario that ran on both brokers side by side (issue 28); "" unless
// the run had both.
func (rep *report) brokerTable() string {
	if len(rep.brokers) < 2 {
		return ""
	}
	kf, ak := rep.on(brokerKfake), rep.on(apacheKafka)
	var b strings.Builder
	b.WriteString("## kfake and Apache Kafka 4.4 side by side (issue 28)\n\n")
	b.WriteString("Each scenario's runs on the two brokers come one after the other in each round; the ratio is the median of the rounds' ratios. CPU is the scenario process's alone: kfake runs in the harness's process, Apache Kafka in a JVM of its own.\n\n")
	b.WriteString("| scenario | records/s on kfake | records/s on Apache Kafka | Apache Kafka / kfake | CPU s per M records, kfake / Apache Kafka | peak RSS, kfake / Apache Kafka |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
	for _, x := range kf.results {
		var y scenarioResult
		found := false
		for _, r := range ak.results {
			if r.sc.name == x.sc.name {
				y, found = r, true
			}
		}
		if !found {
			continue
		}
		label := scenarioLabels[x.sc.name]
		if len(x.runs) == 0 || len(y.runs) == 0 {
			cells := func(r scenarioResult) string {
				if len(r.runs) == 0 {
					return why(r)
				}
				return fmtSpread(r.recordsPerSec(rep.opts.records), "%s")
			}
			fmt.Fprintf(&b, "| %s | %s | %s | | | |\n", label, cells(x), cells(y))
			continue
		}
		rss := func(r scenarioResult) float64 {
			return r.spreadOf(func(x runResult) float64 { return float64(x.stats.PeakRSSBytes) / mib }).median
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.2f / %.2f | %.0f / %.0f MiB |\n", label,
			fmtSpread(x.recordsPerSec(rep.opts.records), "%s"), fmtSpread(y.recordsPerSec(rep.opts.records), "%s"),
			fmtSpread(roundRatio(y, x, rep.opts.records), "%.2f×"),
			rep.cpuPerMOf(x).median, rep.cpuPerMOf(y).median, rss(x), rss(y))
	}
	return b.String() + "\n"
}

// kstreamsRow is a row of the word count table: an implementation and guarantee, and the
// Kafka Streams scenario it is compared with.
type kstreamsRow struct{ what, scenario, base string }

var kstreamsRows = []kstreamsRow{
	{"Kafka Streams 4.4, exactly_once_v2", "ks-wordcount", "ks-wordcount"},
	{"StoatFlow, exactly_once_v2", "wordcount", "ks-wordcount"},
	{"Kafka Streams 4.4, at_least_once", "ks-wordcount-alos", "ks-wordcount-alos"},
	{"StoatFlow, at_least_once", "wordcount-alos", "ks-wordcount-alos"},
	{"goka, at-least-once (it has no exactly-once)", "goka-wordcount", "ks-wordcount-alos"},
}

// kstreamsTable shows the word count of Kafka Streams 4.4, StoatFlow and goka on Apache Kafka
// side by side (issue 29); "" when Kafka Streams did not run.
func (rep *report) kstreamsTable() string {
	v := rep.on(apacheKafka)
	ran := false
	for _, r := range v.results {
		ran = ran || r.sc.kstreams
	}
	if !ran {
		return ""
	}
	find := func(name string) (scenarioResult, bool) {
		for _, r := range v.results {
			if r.sc.name == name {
				return r, true
			}
		}
		return scenarioResult{}, false
	}
	var b strings.Builder
	b.WriteString("## Word count: Kafka Streams 4.4, StoatFlow and goka on Apache Kafka (issue 29)\n\n")
	fmt.Fprintf(&b, "The same input on the same broker, in the same rounds; Kafka Streams and the agent with one stream thread (num.stream.threads = 1). Kafka Streams runs on %s with %s; its properties are the agent's [streams] config (below). Ratios are against Kafka Streams at the same guarantee, median of the rounds' ratios.\n\n",
		orUnknown(rep.javaVersion), strings.Join(kstreamsJVM[:2], " "))
	b.WriteString("| word count on Apache Kafka 4.4 | records/s | records/s / Kafka Streams' | CPU s per M records | CPU per record / Kafka Streams' | CPU s per M records after RUNNING | peak RSS | start → RUNNING | CPU s to RUNNING |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, row := range kstreamsRows {
		r, ok := find(row.scenario)
		switch {
		case !ok:
			fmt.Fprintf(&b, "| %s | not measured (scenario not run) | | | | | | | |\n", row.what)
			continue
		case len(r.runs) == 0:
			fmt.Fprintf(&b, "| %s | %s | | | | | | | |\n", row.what, why(r))
			continue
		}
		ratio, cpuRatio := "n/a (Kafka Streams not measured)", "n/a"
		cpu := rep.cpuPerMOf(r).median
		if base, ok := find(row.base); ok && len(base.runs) > 0 {
			ratio = fmtSpread(roundRatio(r, base, rep.opts.records), "%.2f×")
			if baseCPU := rep.cpuPerMOf(base).median; baseCPU > 0 {
				cpuRatio = fmt.Sprintf("%.2f×", cpu/baseCPU)
			}
		}
		rss := r.spreadOf(func(x runResult) float64 { return float64(x.stats.PeakRSSBytes) / mib })
		toRunning, cpuToRunning, cpuAfter := "n/a (never said)", "n/a", "n/a"
		if r.allSaidRunning() {
			toRunning = fmtSpread(r.spreadOf(func(x runResult) float64 { return x.toRunning.Seconds() }), "%.1f s")
			cpuToRunning = fmtSpread(r.spreadOf(func(x runResult) float64 { return x.cpuToRunning }), "%.2f")
			cpuAfter = fmtSpread(r.spreadOf(func(x runResult) float64 {
				return (x.stats.CPUSeconds - x.cpuToRunning) / float64(rep.opts.records) * 1e6
			}), "%.2f")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", row.what,
			fmtSpread(r.recordsPerSec(rep.opts.records), "%s"), ratio, fmtSpread(rep.cpuPerMOf(r), "%.2f"), cpuRatio,
			cpuAfter, fmtSpread(rss, "%.0f MiB"), toRunning, cpuToRunning)
	}
	return b.String() + "\n"
}

// allSaidRunning says whether every run's process said when it was running.
func (r scenarioResult) allSaidRunning() bool {
	for _, x := range r.runs {
		if x.toRunning <= 0 {
			return false
		}
	}
	return len(r.runs) > 0
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown JVM"
	}
	return s
}

// howBrokers is the part of "How it is measured" about the brokers and Kafka Streams.
func (rep *report) howBrokers() string {
	var b strings.Builder
	for _, broker := range rep.brokers {
		if broker != apacheKafka {
			continue
		}
		fmt.Fprintf(&b, `- Apache Kafka 4.4.0 runs as one combined broker and controller node on loopback
  (test/kafka/kafkatest, the real-broker tests' harness, kafkatest.Own with Spec{Nodes: 1,
  Server: true}), started once for the whole run, in a JVM of its own with the options
  kafka-server-start.sh gives a broker: %s. Its server.properties are the tests' (docs/testing.md):
  replication factor 1, group.initial.rebalance.delay.ms = 0 (Kafka's default 3000 would add
  3 s to every process's first rebalance), transaction.version 2. Before each run every topic
  but Kafka's own and every group are deleted and the input and output topics made again, so
  every run starts from empty topics as on kfake; the scenario processes leave their group
  when they stop (leave.group.on.close, Kafka Streams' CloseOptions LEAVE_GROUP) so that none
  is left in it. The broker's CPU is its JVM's, never counted in a scenario's, but it shares
  the two cores with the scenario process and the harness.
`, kafkaJVM())
	}
	if rep.javaVersion != "" {
		fmt.Fprintf(&b, `- Kafka Streams 4.4.0 (bench/kstreams, a Maven module built once per run; its jars stay in
  ~/.m2) runs the word count of bench/scripts/wordcount.lua with the DSL (flatMapValues to
  the line's runs of letters, groupBy the word, count into a RocksDB store, to) as a scenario
  process: java %s -cp … %s, on %s. Its
  properties are the agent's [streams] config of the same scenario, key for key (Kafka
  Streams' own names: processing.guarantee, commit.interval.ms = %d for both guarantees,
  statestore.cache.max.bytes = 0, enable.transactional.statestores = true), with its own
  application.id, bootstrap.servers and state.dir, and num.stream.threads left at 1 as the
  agent's. Client settings neither names are each one's own defaults: Kafka Streams' producer
  lingers 100 ms, the agent's 0 ms under exactly-once and 5 ms under at-least-once
  (docs/config.md); goka has the agent's sarama clients. Its CPU time and peak RSS are read
  from /proc/<pid> when its last output is read, JIT compilation and garbage collection
  included.
- start → RUNNING is the scenario process's start until it first says it is running (the
  agent: state RUNNING; Kafka Streams: state RUNNING; goka: its processor ready), the input
  already waiting; CPU s to RUNNING is its CPU time then, read from /proc/<pid>/stat, and CPU
  s per M records after RUNNING leaves it out (a JVM's start-up and first JIT compilation
  weigh on short runs).
`, strings.Join(kstreamsJVM, " "), kstreamsMain, rep.javaVersion, commitIntervalMs)
	}
	return b.String()
}
