package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/bench/internal/childproc"
)

func TestThousandsAndSpread(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -45000: "-45,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	if got := fmtSpread(spread{median: 120000, min: 100000, max: 130000.4}, "%s"); got != "120,000 (100,000 – 130,000)" {
		t.Errorf("spread = %q", got)
	}
	if got := fmtSpread(spread{median: 12, min: 12, max: 12}, "%.0f ms"); got != "12 ms" {
		t.Errorf("single run = %q", got)
	}
}

func testReport(t *testing.T) *report {
	t.Helper()
	byName := func(n string) scenario {
		sc, err := scenarioNamed(n)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	run := func(elapsed time.Duration, p99 time.Duration, peak int64) runResult {
		return runResult{elapsed: elapsed, stats: childproc.Stats{PeakRSSBytes: peak, CPUSeconds: 2},
			latency: []latencyResult{{load: 0.2, offered: 1000, p50: p99 / 2, p99: p99}}}
	}
	rep := &report{
		opts:   options{records: 1_000_000, runs: 1, latencyLoads: []float64{0.2}, latencyFor: time.Second},
		budget: 64 * mib,
		idle:   &childproc.Stats{RSSBytes: 30 * mib},
		results: []scenarioResult{
			{sc: byName("ceiling"), runs: []runResult{run(2*time.Second, 0, 50*mib)}},               // 500,000/s
			{sc: byName("stateless"), runs: []runResult{run(3*time.Second, 0, 50*mib)}},             // 333,333/s
			{sc: byName("wordcount"), runs: []runResult{run(20*time.Second, time.Second, 300*mib)}}, // 50,000/s
			{sc: byName("windowed"), unsupported: "not supported yet: windowed aggregations"},
		},
		micro: []microResult{
			{name: "BenchmarkLuaCallbackTwoStrings", nsPerOp: 350, allocsPerOp: 3},
			{name: "BenchmarkCommit10k", nsPerOp: 5e6},
			{name: "BenchmarkTap/nobody", nsPerOp: 800, allocsPerOp: 7},
			{name: "BenchmarkTap/one-tap", nsPerOp: 840, allocsPerOp: 7},
		},
		brokers: []string{brokerKfake},
		idles:   map[string]idleResult{brokerKfake: {stats: childproc.Stats{RSSBytes: 30 * mib}}},
	}
	for i := range rep.results {
		rep.results[i].broker = brokerKfake
	}
	return rep
}

func TestTargets(t *testing.T) {
	want := map[string]string{
		"stateless Lua pipeline ≥ 50 % of the ceiling's records/s":                                                "yes",
		"stateless Lua pipeline ≥ 250,000 records/s":                                                              "yes",
		"word count, exactly-once, transactional stores ≥ 100,000 records/s":                                      "**no**",
		"word count p99 latency ≤ commit interval + 50 ms = 150 ms":                                               "**no** at 20 %",
		"windowed ≥ 70,000 records/s":                                                                             "n/a",
		"RSS ≤ 64 MiB idle (word count agent, RUNNING, no input)":                                                 "yes",
		"a Lua callback with two string arguments ≤ 1 µs and ≤ 2 allocations":                                     "**no**",
		"commit barrier of 10,000 dirty keys ≤ 20 ms":                                                             "yes",
		"a live tap on a busy node: ≤ 10 % more time and no more allocations per record than with nobody tapping": "yes",
	}
	got := map[string]string{}
	for _, tg := range testReport(t).targets() {
		got[tg.what] = tg.met
	}
	for what, met := range want {
		if got[what] != met {
			t.Errorf("%s: met = %q, want %q", what, got[what], met)
		}
	}
	rss := "RSS during the word count ≤ 128 MiB + the uncommitted budget (64 MiB) = 192 MiB"
	if got[rss] != "**no**" {
		t.Errorf("%s: met = %q, want **no**", rss, got[rss])
	}
}

func TestTableShowsRatiosAndUnsupported(t *testing.T) {
	table := testReport(t).table()
	for _, want := range []string{
		"| ceiling: raw sarama consume → produce | 500,000 | 1.00 |",
		"| 333,333 | 0.67 |",
		"| p50 / p99 latency at 20 % load | peak RSS |",
		"| 50,000 | 0.10 | 500 / 1000 ms | 300 MiB | 2.00 |",
		"| windowed: hopping-window count, grace, suppress, exactly-once v2 | not supported yet: windowed aggregations | | | | |\n",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestGokaTargetsCompareRoundByRound(t *testing.T) {
	rep := testReport(t)
	byName := func(n string) scenario {
		sc, err := scenarioNamed(n)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	runs := func(seconds ...float64) []runResult {
		var out []runResult
		for _, s := range seconds {
			out = append(out, runResult{elapsed: time.Duration(s * float64(time.Second)), stats: childproc.Stats{CPUSeconds: 8}})
		}
		return out
	}
	rep.opts.runs = 3
	rep.results = []scenarioResult{
		// Round 2 is slow for both: the ratio of each round is 2.0, 2.0, 2.0.
		{sc: byName("wordcount"), runs: runs(10, 20, 10)},
		{sc: byName("goka-wordcount"), runs: runs(20, 40, 20)},
		{sc: byName("stateless"), runs: runs(4, 4, 4)},
		{sc: byName("goka-stateless"), runs: runs(4, 5, 4)},
	}
	got := map[string]target{}
	for _, tg := range rep.gokaTargets() {
		got[tg.what] = tg
	}
	for what, met := range map[string]string{
		"word count, exactly-once, ≥ 2.0× goka's word count":   "yes",
		"word count, exactly-once, ≤ 9 CPU s per M records":    "yes",
		"stateless ≥ 1.2× goka's stateless re-emit":            "**no**",
		"word count at-least-once ≥ the exactly-once rate":     "n/a",
		"word count, 1,000,000-word vocabulary, ≥ 1.2× goka's": "n/a",
		"windowed: CPU per record ≤ 2× the word count's":       "n/a",
	} {
		if got[what].met != met {
			t.Errorf("%s: met = %q (%s), want %q", what, got[what].met, got[what].measured, met)
		}
	}
	if m := got["word count, exactly-once, ≥ 2.0× goka's word count"].measured; m != "2.00× goka" {
		t.Errorf("word count ratio: %q", m)
	}
	table := rep.gokaTable()
	for _, want := range []string{
		"| word count, exactly-once / goka (at-least-once) | 100,000 (50,000 – 100,000) | 50,000 (25,000 – 50,000) | 2.00× | 8.00 / 8.00 |",
		"| word count at-least-once / goka | not measured (scenario not run or failed) | | | |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestThreadTargets(t *testing.T) {
	rep := testReport(t)
	byName := func(n string) scenario {
		sc, err := scenarioNamed(n)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	runs := func(cpu float64, seconds ...float64) []runResult {
		var out []runResult
		for _, s := range seconds {
			out = append(out, runResult{elapsed: time.Duration(s * float64(time.Second)), stats: childproc.Stats{CPUSeconds: cpu}})
		}
		return out
	}
	rep.opts.runs = 2
	rep.results = []scenarioResult{
		{sc: byName("ceiling"), runs: runs(3, 2, 2)},
		{sc: byName("lua-heavy"), runs: runs(8, 20, 30)},
		{sc: byName("lua-heavy-2t"), runs: runs(8, 11, 15)},
		{sc: byName("wordcount"), runs: runs(8, 10, 10)},
		{sc: byName("wordcount-2t"), runs: runs(9, 8, 8)},
	}
	got := map[string]target{}
	for _, tg := range rep.threadTargets() {
		got[tg.what] = tg
	}
	for what, want := range map[string]target{
		"Lua-heavy stateless at 2 threads ≥ 1.7× its 1-thread rate":                {measured: "1.91×", met: "yes"},
		"word count, exactly-once, at 2 threads: CPU per record ≤ 1.1× 1 thread's": {measured: "1.12× (9.00 / 8.00 CPU s per M records)", met: "**no**"},
		"word count, exactly-once: CPU per record ≤ 2× the raw pipe's (ceiling)":   {measured: "2.67× (8.00 / 3.00 CPU s per M records)", met: "**no**"},
	} {
		if g := got[what]; g.measured != want.measured || g.met != want.met {
			t.Errorf("%s: %q, %q; want %q, %q", what, g.measured, g.met, want.measured, want.met)
		}
	}
}

// The producer comparison takes each round's ratio: round 1 ran both pipes on a slow machine,
// round 2 on a fast one, and the medians of the rates alone would mix the two phases.
func TestTxnProducerTableComparesRoundByRound(t *testing.T) {
	rep := testReport(t)
	byName := func(n string) scenario {
		sc, err := scenarioNamed(n)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	run := func(seconds, cpu float64) runResult {
		return runResult{elapsed: time.Duration(seconds * float64(time.Second)), stats: childproc.Stats{CPUSeconds: cpu}}
	}
	rep.opts.runs = 2
	rep.results = []scenarioResult{
		{sc: byName("eos-pipe-sarama"), runs: []runResult{run(20, 6), run(5, 4.5)}},
		{sc: byName("eos-pipe-kafkaio"), runs: []runResult{run(10, 3), run(4, 3)}},
	}
	table := rep.txnProducerTable()
	for _, want := range []string{
		"| exactly-once pipe on the agent's producer (agent/kafkaio) | 175,000 (100,000 – 250,000) | 3.00 | 1.00× | 1.00× |",
		// records/s ratios 0.5 and 0.8, CPU ratios 2.0 and 1.5.
		"| exactly-once pipe on sarama's transactional AsyncProducer | 125,000 (50,000 – 200,000) | 5.25 (4.50 – 6.00) | 0.65× (0.50× – 0.80×) | 1.75× (1.50× – 2.00×) |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	rep.results = rep.results[:1]
	if table := rep.txnProducerTable(); !strings.Contains(table, "| exactly-once pipe on the agent's producer (agent/kafkaio) | not measured (scenario not run or failed) | | | |") ||
		!strings.Contains(table, "| n/a (the agent's producer not measured) | n/a |") {
		t.Errorf("without the agent's producer:\n%s", table)
	}
}

// RESULTS.md is written whole from one run: it names the machine, the commit, the date and the
// load the run shared the machine with, and sends analyses to NOTES.md.
func TestMarkdownNamesItsOneRun(t *testing.T) {
	rep := testReport(t)
	rep.machine = machineInfo{cores: 2, cpu: "Intel Xeon", memory: "23.5 GiB RAM", kernel: "6.18", goVersion: "go1.26.8",
		commit: "aa91552", date: "2026-12-05 08:00 UTC", load: "0.42, 0.31, 0.20"}
	rep.loadEnd = "1.93, 0.80, 0.35"
	md := rep.markdown()
	for _, want := range []string{
		"# StoatFlow benchmark results\n\n<!-- Written whole by `make bench` (go run ./bench) from one run; do not edit by hand: analyses go in NOTES.md. -->\n\n",
		"- machine: 2 cores (Intel Xeon), 23.5 GiB RAM, Linux 6.18\n- Go: go1.26.8\n- commit: aa91552\n- date: 2026-12-05 08:00 UTC\n",
		"- load average (1, 5, 15 min; other work on the machine counts too): 0.42, 0.31, 0.20 at the start, 1.93, 0.80, 0.35 at the end\n",
		"[NOTES.md](NOTES.md)",
		"## Targets (issue 8)", "## How it is measured",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("RESULTS.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Count(md, "- commit: ") != 1 || strings.Count(md, "- date: ") != 1 {
		t.Errorf("RESULTS.md names more than one run:\n%s", md)
	}
}

func TestLoadAverageReadsProc(t *testing.T) {
	if _, err := os.Stat("/proc/loadavg"); err != nil {
		t.Skip("no /proc/loadavg on this system")
	}
	if got := loadAverage(); !regexp.MustCompile(`^\d+\.\d+, \d+\.\d+, \d+\.\d+$`).MatchString(got) {
		t.Fatalf("loadAverage() = %q", got)
	}
}
