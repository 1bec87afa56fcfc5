// Command bench measures StoatFlow against a raw sarama pipe on the same machine and
// in-process broker (issue 8) and prints the results as Markdown. `make bench` runs it after
// the Go micro-benchmarks with -out bench/RESULTS.md, which it writes whole from that one run;
// `go run ./bench -records 100000 -runs 1` is a quick check that writes no file. Figures of
// other runs, and analyses, go by hand in bench/NOTES.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stoatflow/stoatflow/agent"
	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/bench/internal/childproc"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(argv []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var o options
	fs.IntVar(&o.records, "records", 1_000_000, "input records per run")
	fs.IntVar(&o.runs, "runs", 3, "runs per scenario (the table shows the median and the spread)")
	list := fs.String("scenarios", strings.Join(scenarioNames(), ","), "comma-separated scenarios to run")
	out := fs.String("out", "", "also write the results to this file (make bench: bench/RESULTS.md, written whole from its one run)")
	micro := fs.String("micro", "", "output of `go test -bench -benchmem` to check and include")
	loads := fs.String("latency-loads", "0.2,0.5", "loads of the latency phases, as shares of the run's measured records/s (empty: none)")
	fs.DurationVar(&o.latencyFor, "latency-time", 2*time.Second, "length of each latency phase")
	fs.DurationVar(&o.idleSettle, "idle-settle", 2*time.Second, "how long the idle agent runs before its RSS is read")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "directory for a CPU profile of each agent and goka scenario process (<scenario>-<broker>-run<n>.pprof)")
	fs.BoolVar(&o.verbose, "v", false, "pass the scenario processes' warnings and errors through to stderr")
	brokerList := fs.String("brokers", brokerKfake, "comma-separated brokers to run every scenario on, side by side: kfake (in process), kafka (Apache Kafka 4.4, one node; needs Java and Maven)")
	fs.BoolVar(&o.verify, "verify", false, "check every word count's output, read read_committed, against its input, count by count")
	// The harness starts each agent scenario process as this same binary with these flags.
	var child childproc.Args
	var childBrokers string
	child.Flags(fs, &childBrokers)
	err := fs.Parse(argv)
	if err != nil {
		return err
	}
	if child.Scenario != "" {
		child.Brokers, child.Verbose = strings.Split(childBrokers, ","), o.verbose
		return runChild(child, os.Stdin, stdout)
	}
	if o.records < 1 || o.runs < 1 {
		return errors.New("-records and -runs must be at least 1")
	}
	if o.brokers, err = parseBrokers(*brokerList); err != nil {
		return err
	}
	selected, err := parseScenarios(*list)
	if err != nil {
		return err
	}
	if selected, err = runnable(selected, o.brokers, flagSet(fs, "scenarios")); err != nil {
		return err
	}
	if o.latencyLoads, err = parseLoads(*loads); err != nil {
		return err
	}
	if o.cpuprofile != "" {
		if err := os.MkdirAll(o.cpuprofile, 0o755); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
	}
	rep := &report{opts: o, machine: describeMachine()}
	if *micro != "" {
		f, err := os.Open(*micro)
		if err != nil {
			return fmt.Errorf("-micro: %w", err)
		}
		rep.micro, err = parseMicro(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("-micro %s: %w", *micro, err)
		}
	}
	if slices.ContainsFunc(selected, func(sc scenario) bool { return sc.goka != "" }) {
		dir, err := os.MkdirTemp("", "stoatflow-bench-goka-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, "bench: building bench/goka")
		if rep.opts.gokaExe, rep.gokaVersion, err = buildGoka(dir); err != nil {
			return err
		}
	}
	if slices.ContainsFunc(selected, func(sc scenario) bool { return sc.kstreams }) {
		fmt.Fprintln(os.Stderr, "bench: building bench/kstreams")
		if rep.opts.kstreams, err = buildKStreams(); err != nil {
			return err
		}
		rep.javaVersion = rep.opts.kstreams.version
	}
	on, err := startBrokers(rep.opts.brokers)
	if err != nil {
		return err
	}
	err = measure(rep, selected, on)
	for name, b := range on {
		err = errors.Join(err, b.close(rep.failedOn(name)))
	}
	if err != nil {
		return err
	}
	rep.loadEnd = loadAverage()

	md := rep.markdown()
	fmt.Fprint(stdout, md)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench: wrote %s\n", *out)
	}
	for _, r := range rep.results {
		if r.failed != nil {
			return fmt.Errorf("%s on %s: %w", r.sc.name, r.broker, r.failed)
		}
	}
	return nil
}

// measure runs the selected scenarios on each broker, one run of each in turn, so that a slow
// phase of the machine does not fall on one scenario only, and a scenario's runs on the
// brokers come one after the other.
func measure(rep *report, selected []scenario, on map[string]benchBroker) error {
	o := rep.opts
	rep.brokers = o.brokers
	for _, sc := range selected {
		r := scenarioResult{sc: sc}
		cfg, err := checkScript(sc)
		var unsupported *unsupportedError
		switch {
		case errors.As(err, &unsupported):
			r.unsupported = unsupported.msg
		case err != nil:
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		if sc.name == "wordcount" {
			rep.budget = cfg.UncommittedMaxBytes
		}
		for _, b := range o.brokers {
			if sc.runsOn(b) {
				r.broker = b
				rep.results = append(rep.results, r)
			}
		}
	}
	for run := 1; run <= o.runs; run++ {
		for i := range rep.results {
			r := &rep.results[i]
			if r.unsupported != "" || r.failed != nil {
				continue
			}
			fmt.Fprintf(os.Stderr, "bench: %s on %s, run %d of %d\n", r.sc.name, r.broker, run, o.runs)
			res, err := runScenario(r.sc, run, o, on[r.broker])
			if err != nil {
				r.failed = fmt.Errorf("run %d: %w", run, err)
				continue
			}
			r.runs = append(r.runs, res)
		}
	}
	rep.idles = map[string]idleResult{}
	for _, b := range o.brokers {
		if _, ok := rep.on(b).result("wordcount"); ok {
			fmt.Fprintf(os.Stderr, "bench: idle word count agent on %s\n", b)
			st, err := idleRSS(o, on[b])
			rep.idles[b] = idleResult{stats: st, err: err}
		}
	}
	return nil
}

// runnable keeps the scenarios that run on one of the brokers. A scenario named with
// -scenarios that runs on none is an error; by default such scenarios are left out.
func runnable(selected []scenario, brokers []string, named bool) ([]scenario, error) {
	var out []scenario
	for _, sc := range selected {
		if slices.ContainsFunc(brokers, sc.runsOn) {
			out = append(out, sc)
		} else if named {
			return nil, fmt.Errorf("-scenarios: %s runs on Apache Kafka only: -brokers %s", sc.name, strings.Join(append(slices.Clone(brokers), apacheKafka), ","))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("-scenarios: no scenario runs on the brokers of -brokers")
	}
	return out, nil
}

// flagSet says whether the flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// unsupportedError is a scenario whose script uses what StoatFlow does not support yet.
type unsupportedError struct{ msg string }

func (e *unsupportedError) Error() string { return e.msg }

// checkScript loads the scenario's script and builds its topology without a broker. A
// "not supported yet" error makes the scenario's row say so instead of measuring it.
func checkScript(sc scenario) (*config.Config, error) {
	dir, err := os.MkdirTemp("", "stoatflow-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	registry := ""
	if sc.avro {
		registry = "http://127.0.0.1:9" // never asked: validating compiles the schemas only
	}
	cfg, err := writeScenario(sc, []string{"127.0.0.1:9"}, dir, registry)
	if err != nil {
		return nil, err
	}
	_, err = agent.Validate(cfg)
	if err == nil {
		return cfg, nil
	}
	msg := err.Error()
	if i := strings.Index(msg, "not supported yet"); i >= 0 {
		// Keep the cause, drop the script's temporary path.
		return cfg, &unsupportedError{msg: strings.ReplaceAll(msg[i:], dir+string(filepath.Separator), "")}
	}
	return nil, err
}

// parseLoads reads the -latency-loads list of shares in (0, 1].
func parseLoads(list string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v <= 0 || v > 1 {
			return nil, fmt.Errorf("-latency-loads: %q is not a share in (0, 1]", f)
		}
		out = append(out, v)
	}
	return out, nil
}
