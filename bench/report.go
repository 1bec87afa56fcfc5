package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/stoatflow/stoatflow/bench/internal/childproc"
)

// scenarioResult is a scenario's row: its runs, or why it has none.
type scenarioResult struct {
	sc          scenario
	broker      string // where it ran: kfake or apacheKafka
	unsupported string // the "not supported yet" error of its script
	failed      error
	runs        []runResult
}

func (r scenarioResult) recordsPerSec(records int) spread {
	return r.spreadOf(func(x runResult) float64 { return x.recordsPerSec(records) })
}

func (r scenarioResult) spreadOf(f func(runResult) float64) spread {
	var v []float64
	for _, run := range r.runs {
		v = append(v, f(run))
	}
	return spreadOf(v)
}

// report is everything RESULTS.md shows.
type report struct {
	opts    options
	machine machineInfo
	results []scenarioResult
	idle    *childproc.Stats
	idleErr error
	micro   []microResult
	budget  int64  // statestore.uncommitted.max.bytes of the word count agent
	loadEnd string // the load average when the run ended (loadAverage)
	// gokaVersion is the goka module bench/goka was built with; "" when it was not built.
	gokaVersion string
	// brokers are the brokers the scenarios ran on, in order; results name theirs, and idle
	// and idleErr are those of a view of one broker (on).
	brokers []string
	idles   map[string]idleResult
	// javaVersion is the JVM's that ran Kafka Streams; "" when it did not run.
	javaVersion string
}

func (rep *report) result(name string) (scenarioResult, bool) {
	for _, r := range rep.results {
		if r.sc.name == name && len(r.runs) > 0 {
			return r, true
		}
	}
	return scenarioResult{}, false
}

// ceiling is the median records/s of the ceiling, 0 when it did not run.
func (rep *report) ceiling() float64 {
	if r, ok := rep.result("ceiling"); ok {
		return r.recordsPerSec(rep.opts.records).median
	}
	return 0
}

const mib = 1 << 20

// table renders the scenario table in Markdown.
func (rep *report) table() string {
	var b strings.Builder
	b.WriteString("| scenario | records/s | ratio to ceiling |")
	for _, load := range rep.opts.latencyLoads {
		fmt.Fprintf(&b, " p50 / p99 latency at %.0f %% load |", load*100)
	}
	b.WriteString(" peak RSS | CPU s per M records |\n|" + strings.Repeat(" --- |", 5+len(rep.opts.latencyLoads)) + "\n")
	empty := strings.Repeat(" |", 3+len(rep.opts.latencyLoads))
	ceiling := rep.ceiling()
	for _, r := range rep.results {
		label := scenarioLabels[r.sc.name]
		switch {
		case r.unsupported != "":
			fmt.Fprintf(&b, "| %s | %s |%s\n", label, oneLine(r.unsupported), empty)
			continue
		case r.failed != nil:
			fmt.Fprintf(&b, "| %s | failed: %s |%s\n", label, oneLine(r.failed.Error()), empty)
			continue
		}
		rps := r.recordsPerSec(rep.opts.records)
		ratio := "n/a (no ceiling run)"
		if ceiling > 0 {
			ratio = fmt.Sprintf("%.2f", rps.median/ceiling)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |", label, fmtSpread(rps, "%s"), ratio)
		for i := range rep.opts.latencyLoads {
			switch {
			case r.sc.closeWindows:
				b.WriteString(" n/a: final results wait for the window to close |")
				continue
			case !r.sc.latency:
				b.WriteString(" n/a: not measured for this scenario |")
				continue
			}
			p50 := r.spreadOf(func(x runResult) float64 { return ms(x.latency[i].p50) })
			p99 := r.spreadOf(func(x runResult) float64 { return ms(x.latency[i].p99) })
			fmt.Fprintf(&b, " %.0f / %s |", p50.median, fmtSpread(p99, "%.0f ms"))
		}
		rss := r.spreadOf(func(x runResult) float64 { return float64(x.stats.PeakRSSBytes) / mib })
		cpu := r.spreadOf(func(x runResult) float64 {
			return x.stats.CPUSeconds / float64(rep.opts.records) * 1e6
		})
		fmt.Fprintf(&b, " %s | %s |\n", fmtSpread(rss, "%.0f MiB"), fmtSpread(cpu, "%.2f"))
	}
	return b.String()
}

var scenarioLabels = map[string]string{
	"ceiling":                "ceiling: raw sarama consume → produce",
	"eos-pipe-sarama":        "exactly-once pipe on sarama's transactional AsyncProducer",
	"eos-pipe-kafkaio":       "exactly-once pipe on the agent's producer (agent/kafkaio)",
	"stateless":              "stateless: Lua filter + mapValues, at-least-once",
	"stateless-avro":         "stateless with Avro values in and out (Schema Registry wire format)",
	"lua-heavy":              "Lua-heavy stateless: JSON in, a dozen string functions, JSON out, at-least-once",
	"lua-heavy-2t":           "Lua-heavy stateless, 2 threads (num.stream.threads = 2)",
	"goka-stateless":         "goka stateless: Input → Emit of the long words' values upper-cased, at-least-once",
	"wordcount":              "word count: flatMapValues → groupBy → count → to, exactly-once v2, transactional stores",
	"wordcount-2t":           "word count, exactly-once v2, 2 threads (num.stream.threads = 2)",
	"wordcount-alos":         "word count at-least-once (same script and stores)",
	"goka-wordcount":         "goka word count: Input → Persist (Int64) → Emit, at-least-once (goka has no exactly-once)",
	"wordcount-1m-keys":      "word count, exactly-once v2, keys from a 1,000,000-word vocabulary",
	"goka-wordcount-1m-keys": "goka word count, keys from a 1,000,000-word vocabulary",
	"windowed":               "windowed: hopping-window count, grace, suppress, exactly-once v2",
	"ks-wordcount":           "Kafka Streams 4.4 word count, exactly-once v2 (the same [streams] config)",
	"ks-wordcount-alos":      "Kafka Streams 4.4 word count, at-least-once (the same [streams] config)",
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fmtSpread prints "median (min–max)"; a "%s" format prints thousands-separated integers.
func fmtSpread(s spread, format string) string {
	f := func(v float64) string {
		if format == "%s" {
			return thousands(int64(v + 0.5))
		}
		return fmt.Sprintf(format, v)
	}
	if s.min == s.max {
		return f(s.median)
	}
	return fmt.Sprintf("%s (%s – %s)", f(s.median), f(s.min), f(s.max))
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", "\\|")
}

// loopTable shows, from each agent's own metrics, where its processing loop spent the
// timed span: records through the topology (Lua shown apart) and commit barriers; the rest
// is waiting for input and the loop's own overhead.
func (rep *report) loopTable() string {
	var b strings.Builder
	for _, r := range rep.results {
		if len(r.runs) == 0 || r.runs[0].stats.Loop == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\n### Where an agent's processing loop spends the timed span (median of runs, from its metrics)\n\n")
			b.WriteString("| scenario | processing | of which Lua | commit barriers | commits | other (waiting for input, loop) |\n")
			b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
		}
		share := func(f func(childproc.LoopStats) float64) float64 {
			return r.spreadOf(func(x runResult) float64 { return f(*x.stats.Loop) / x.elapsed.Seconds() * 100 }).median
		}
		process := share(func(l childproc.LoopStats) float64 { return l.ProcessSeconds })
		commit := share(func(l childproc.LoopStats) float64 { return l.CommitSeconds })
		commits := r.spreadOf(func(x runResult) float64 { return float64(x.stats.Loop.Commits) }).median
		perCommit := r.spreadOf(func(x runResult) float64 {
			return x.stats.Loop.CommitSeconds / float64(max(x.stats.Loop.Commits, 1)) * 1000
		}).median
		// The agent exports its Lua time at commit barriers only.
		lua := "n/a (no commit yet)"
		if commits > 0 {
			lua = fmt.Sprintf("%.0f %%", share(func(l childproc.LoopStats) float64 { return l.LuaSeconds }))
		}
		p50 := r.spreadOf(func(x runResult) float64 { return x.stats.Loop.CommitP50 * 1000 }).median
		p99 := r.spreadOf(func(x runResult) float64 { return x.stats.Loop.CommitP99 * 1000 }).median
		fmt.Fprintf(&b, "| %s | %.0f %% | %s | %.0f %% | %.0f, %.1f ms each (p50 ≤ %.0f ms, p99 ≤ %.0f ms) | %.0f %% |\n", r.sc.name,
			process, lua, commit, commits, perCommit, p50, p99, max(0, 100-process-commit))
	}
	return b.String()
}

// target is one line of the targets.
type target struct{ what, measured, met string }

func verdict(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// targets checks the figures against the targets of issue 8.
func (rep *report) targets() []target {
	var out []target
	ceiling := rep.ceiling()
	notRun := func(what string) target { return target{what, "not measured (scenario not run or failed)", "n/a"} }

	if r, ok := rep.result("stateless"); ok && ceiling > 0 {
		ratio := r.recordsPerSec(rep.opts.records).median / ceiling
		out = append(out, target{"stateless Lua pipeline ≥ 50 % of the ceiling's records/s",
			fmt.Sprintf("%.0f %%", ratio*100), verdict(ratio >= 0.5)})
	} else {
		out = append(out, notRun("stateless Lua pipeline ≥ 50 % of the ceiling's records/s"))
	}
	if r, ok := rep.result("stateless"); ok {
		v := r.recordsPerSec(rep.opts.records).median
		out = append(out, target{"stateless Lua pipeline ≥ 250,000 records/s",
			thousands(int64(v)) + " records/s", verdict(v >= 250_000)})
	} else {
		out = append(out, notRun("stateless Lua pipeline ≥ 250,000 records/s"))
	}
	avroTarget := "stateless with Avro values in and out ≥ 0.7 of the same pipeline with strings"
	if a, ok := rep.result("stateless-avro"); ok {
		if s, ok := rep.result("stateless"); ok {
			ratio := a.recordsPerSec(rep.opts.records).median / s.recordsPerSec(rep.opts.records).median
			out = append(out, target{avroTarget, fmt.Sprintf("%.2f", ratio), verdict(ratio >= 0.7)})
		} else {
			out = append(out, notRun(avroTarget))
		}
	} else {
		out = append(out, notRun(avroTarget))
	}
	if r, ok := rep.result("wordcount"); ok {
		v := r.recordsPerSec(rep.opts.records).median
		measured := thousands(int64(v)) + " records/s"
		if ceiling > 0 {
			measured += fmt.Sprintf(" (%.2f of the ceiling)", v/ceiling)
		}
		out = append(out, target{"word count, exactly-once, transactional stores ≥ 100,000 records/s", measured, verdict(v >= 100_000)})
		if r.sc.latency && len(rep.opts.latencyLoads) > 0 {
			limit := float64(commitIntervalMs + 50)
			var measured, met []string
			for i, load := range rep.opts.latencyLoads {
				p99 := r.spreadOf(func(x runResult) float64 { return ms(x.latency[i].p99) }).median
				offered := r.spreadOf(func(x runResult) float64 { return float64(x.latency[i].offered) }).median
				measured = append(measured, fmt.Sprintf("%.0f ms at %.0f %% load (%s records/s)", p99, load*100, thousands(int64(offered))))
				met = append(met, fmt.Sprintf("%s at %.0f %%", verdict(p99 <= limit), load*100))
			}
			out = append(out, target{fmt.Sprintf("word count p99 latency ≤ commit interval + 50 ms = %.0f ms", limit),
				strings.Join(measured, "; "), strings.Join(met, "; ")})
		}
		peak := r.spreadOf(func(x runResult) float64 { return float64(x.stats.PeakRSSBytes) }).max
		limit := float64(128*mib + rep.budget)
		out = append(out, target{fmt.Sprintf("RSS during the word count ≤ 128 MiB + the uncommitted budget (%d MiB) = %.0f MiB", rep.budget/mib, limit/mib),
			fmt.Sprintf("%.0f MiB peak (worst run)", peak/mib), verdict(peak <= limit)})
	} else {
		out = append(out, notRun("word count, exactly-once, transactional stores ≥ 100,000 records/s"))
	}
	for _, r := range rep.results {
		if r.sc.name == "windowed" && r.unsupported != "" {
			out = append(out, target{"windowed ≥ 70,000 records/s", r.unsupported, "n/a"})
		}
	}
	if r, ok := rep.result("windowed"); ok {
		v := r.recordsPerSec(rep.opts.records).median
		out = append(out, target{"windowed ≥ 70,000 records/s", thousands(int64(v)) + " records/s", verdict(v >= 70_000)})
	}
	switch {
	case rep.idle != nil:
		v := float64(rep.idle.RSSBytes) / mib
		out = append(out, target{"RSS ≤ 64 MiB idle (word count agent, RUNNING, no input)",
			fmt.Sprintf("%.0f MiB", v), verdict(v <= 64)})
	case rep.idleErr != nil:
		out = append(out, target{"RSS ≤ 64 MiB idle", "failed: " + oneLine(rep.idleErr.Error()), "n/a"})
	}
	if m, ok := findMicro(rep.micro, "BenchmarkLuaCallbackTwoStrings"); ok {
		out = append(out, target{"a Lua callback with two string arguments ≤ 1 µs and ≤ 2 allocations",
			fmt.Sprintf("%.0f ns, %.0f allocations", m.nsPerOp, m.allocsPerOp), verdict(m.nsPerOp <= 1000 && m.allocsPerOp <= 2)})
	} else {
		out = append(out, target{"a Lua callback with two string arguments ≤ 1 µs and ≤ 2 allocations", "not measured (no -micro results)", "n/a"})
	}
	if m, ok := findMicro(rep.micro, "BenchmarkCommit10k"); ok {
		out = append(out, target{"commit barrier of 10,000 dirty keys ≤ 20 ms",
			fmt.Sprintf("%.1f ms", m.nsPerOp/1e6), verdict(m.nsPerOp <= 20e6)})
	} else {
		out = append(out, target{"commit barrier of 10,000 dirty keys ≤ 20 ms", "not measured (no -micro results)", "n/a"})
	}
	return append(out, tapTarget(rep.micro))
}

// tapTarget compares a record through a node nobody taps with one through a tapped node
// (issue 18): the tap samples, so it may not cost a record much, nor allocate per record.
func tapTarget(micro []microResult) target {
	const what = "a live tap on a busy node: ≤ 10 % more time and no more allocations per record than with nobody tapping"
	off, okOff := findMicro(micro, "BenchmarkTap/nobody")
	on, okOn := findMicro(micro, "BenchmarkTap/one-tap")
	if !okOff || !okOn || off.nsPerOp <= 0 {
		return target{what, "not measured (no -micro results)", "n/a"}
	}
	ratio := on.nsPerOp / off.nsPerOp
	return target{what, fmt.Sprintf("%.0f ns with nobody tapping, %.0f ns with one tap (%+.0f %%); %.0f and %.0f allocations",
		off.nsPerOp, on.nsPerOp, 100*(ratio-1), off.allocsPerOp, on.allocsPerOp), verdict(ratio <= 1.10 && on.allocsPerOp <= off.allocsPerOp)}
}

// markdown renders bench/RESULTS.md.
func (rep *report) markdown() string {
	var b strings.Builder
	o := rep.opts
	b.WriteString("# StoatFlow benchmark results\n\n")
	b.WriteString("<!-- Written whole by `make bench` (go run ./bench) from one run; do not edit by hand: analyses go in NOTES.md. -->\n\n")
	m := rep.machine
	fmt.Fprintf(&b, "- machine: %d cores (%s), %s, Linux %s\n", m.cores, m.cpu, m.memory, m.kernel)
	fmt.Fprintf(&b, "- Go: %s\n- commit: %s\n- date: %s\n", m.goVersion, m.commit, m.date)
	fmt.Fprintf(&b, "- load average (1, 5, 15 min; other work on the machine counts too): %s at the start, %s at the end\n", m.load, rep.loadEnd)
	fmt.Fprintf(&b, "- input: %s records of %d B values, %d partitions, keys from a %s-word vocabulary; %d run(s) per scenario: median (min – max)\n",
		thousands(int64(o.records)), lineBytes, partitions, thousands(vocabSize), o.runs)
	b.WriteString(rep.brokersLine())
	b.WriteString("\nEvery figure below comes from this one run. Analyses written by hand, and runs of other commits or\nsubsets of the scenarios, are in [NOTES.md](NOTES.md), each with its date and commit.\n\n")
	b.WriteString(rep.brokerTable())
	b.WriteString(rep.kstreamsTable())
	for _, broker := range rep.brokers {
		v := rep.on(broker)
		fmt.Fprintf(&b, "## On %s\n\n", brokerLabels[broker])
		b.WriteString(v.table())
		b.WriteString("\n### Targets (issue 8)\n\n| target | measured | met |\n| --- | --- | --- |\n")
		for _, t := range v.targets() {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", t.what, t.measured, t.met)
		}
		b.WriteString("\n### Side by side with goka (issue 16)\n\n")
		if v.gokaVersion != "" {
			fmt.Fprintf(&b, "goka %s (bench/goka, a module of its own) on the same broker and input, in the same rounds, with the sarama clients the agent builds from the same config; goka has no exactly-once, so its word counts run at-least-once.\n\n", v.gokaVersion)
		}
		b.WriteString(v.gokaTable())
		b.WriteString("\n### Targets (issue 16)\n\n| target | measured | met |\n| --- | --- | --- |\n")
		for _, t := range v.gokaTargets() {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", t.what, t.measured, t.met)
		}
		b.WriteString("\n### Targets (issue 30)\n\n| target | measured | met |\n| --- | --- | --- |\n")
		for _, t := range v.threadTargets() {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", t.what, t.measured, t.met)
		}
		b.WriteString("\n### Transactional producer: sarama's AsyncProducer against the agent's (issue 28)\n\n")
		b.WriteString(v.txnProducerTable())
		b.WriteString(v.loopTable())
		b.WriteString("\n")
	}
	if len(rep.micro) > 0 {
		fmt.Fprintf(&b, "\n## Micro-benchmarks (`go test -bench . -benchmem`, one run each)\n\n")
		b.WriteString("| package | benchmark | ns/op | B/op | allocs/op |\n| --- | --- | --- | --- | --- |\n")
		for _, r := range rep.micro {
			mem := "| |"
			if r.mem {
				mem = fmt.Sprintf("| %.0f | %.0f |", r.bytesPerOp, r.allocsPerOp)
			}
			fmt.Fprintf(&b, "| %s | %s | %s %s\n", strings.TrimPrefix(r.pkg, "github.com/stoatflow/stoatflow/"), r.name, fmtNs(r.nsPerOp), mem)
		}
	}
	fmt.Fprintf(&b, `
## How it is measured

- Every run starts from empty topics on its broker (a fresh kfake in the harness process, or
  the Apache Kafka node emptied: see below) and writes the input before any clock starts:
  %s records, each a word of the vocabulary (uniform, fixed seed) as key and a %d-byte line
  as value holding that word and digits, so the word count does one count update per
  record. Every scenario runs in its own child process, so peak RSS (VmHWM) and CPU time
  (getrusage; read from /proc/<pid>/stat for Kafka Streams' JVM, the same counters) are the
  scenario's alone, without the broker and the harness.
- records/s = input records / (child process start → the last expected output readable by
  a read_committed consumer in the harness). CPU s per M records counts the child's user +
  system time over the same span, start-up included.
- Latency is measured after the backlog, with the same process still running: for each
  load (a share of the run's measured records/s) the harness offers that rate for %s,
  each record stamped with its send time, and samples (time read by the harness's
  read_committed consumer − record timestamp) for every output. For exactly-once
  scenarios an output is readable only once its transaction commits. The load generator
  shares the two cores, so the higher load leaves the agent less than half of its
  measured capacity.
- The ceiling is a sarama consumer group copying each record to the same output partition,
  with the sarama configs the stateless agent builds from its config (at-least-once, same
  batching and acks). The two cores are shared by the broker, the harness and the child.
- The exactly-once pipes are the ceiling made exactly-once, as the agent's commit barrier is
  under exactly_once_v2: a consumer group member reads the input read_committed and copies
  each record to the same output partition in a transaction that also commits the consumed
  offsets (TxnOffsetCommit with the member's generation), every commit.interval.ms = %d.
  One runs on sarama's transactional AsyncProducer (BeginTxn, Input,
  AddOffsetsToTxnWithGroupMetadata, CommitTxn), the other on the agent's (agent/kafkaio:
  BeginTxn, Send, CommitTxnInGroup); both with the producer config the agent builds
  (idempotent, acks all, one request in flight per broker, linger 0, its transactional id),
  and both get every acknowledgement back (sarama's Successes channel, drained), as the agent
  counts the records it produced.
- goka (bench/goka, its own Go module, built by the harness into a temporary directory) runs
  as a child process like the agents, on the same input: its word count counts each key in
  its group table (every line holds one word, its key) and emits every count, its stateless
  processor re-emits the long words' lines upper-cased. Its sarama clients are the agent's
  (kafkaio.SaramaConfig of the at-least-once agent config) with goka's copartitioning
  assignor and sarama's offset auto-commit, through which goka commits.
- An agent runs its tasks on num.stream.threads workers (1 unless a scenario says 2), each
  with its own Lua runtime; sarama's clients, LevelDB's compactions and the garbage collector
  run beside them (docs/architecture.md). The Lua-heavy scenarios' values are JSON objects of
  the same word, number, time and line.
- The 1 M keys word counts draw their keys from a 1,000,000-word vocabulary: 1 M records
  hold about 632,000 distinct keys, most of them absent from the store when they first come.
`, thousands(int64(o.records)), lineBytes, o.latencyFor, commitIntervalMs)
	b.WriteString(rep.howBrokers())
	return b.String()
}

func fmtNs(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	default:
		return fmt.Sprintf("%.1f ns", ns)
	}
}

// machineInfo identifies where and on what the figures were taken.
type machineInfo struct {
	cores                   int
	cpu, memory, kernel     string
	goVersion, commit, date string
	load                    string // the load average when the run began (loadAverage)
}

func describeMachine() machineInfo {
	m := machineInfo{
		cores:     runtime.NumCPU(),
		cpu:       procField("/proc/cpuinfo", "model name"),
		memory:    procField("/proc/meminfo", "MemTotal"),
		goVersion: runtime.Version(),
		commit:    gitCommit(),
		date:      time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		load:      loadAverage(),
	}
	if k, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = strings.TrimSpace(string(k))
	}
	if kb, err := strconv.ParseInt(strings.TrimSuffix(m.memory, " kB"), 10, 64); err == nil {
		m.memory = fmt.Sprintf("%.1f GiB RAM", float64(kb)/(1<<20))
	}
	return m
}

// loadAverage is the machine's 1, 5 and 15-minute load averages, "0.42, 0.31, 0.20": with two
// cores, anything much above the harness's own share says other work shared the run.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], ", ")
	}
	return "unknown"
}

// procField returns the value of the first "name: value" line of a /proc file.
func procField(path, name string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// gitCommit is the short commit, marked when tracked files differ from it.
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown (not a git checkout)"
	}
	c := strings.TrimSpace(string(out))
	if exec.Command("git", "diff-index", "--quiet", "HEAD", "--").Run() != nil {
		c += " with uncommitted changes"
	}
	return c
}
