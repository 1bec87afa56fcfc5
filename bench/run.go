package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/bench/internal/childproc"
)

// options are the harness's flags.
type options struct {
	records      int
	runs         int
	latencyLoads []float64     // loads of the latency phases, as shares of the run's records/s
	latencyFor   time.Duration // length of each latency phase
	idleSettle   time.Duration // how long an idle agent runs before its RSS is read
	cpuprofile   string        // directory for the scenario processes' CPU profiles
	verbose      bool
	gokaExe      string // the goka scenario processes' executable, built by measure
	// brokers are the brokers every scenario runs on (-brokers), in brokerNames' order.
	brokers []string
	// verify checks the word counts' outputs against the input, count by count (verify.go).
	verify bool
	// kstreams is Kafka Streams' word count, built by measure when a scenario runs it.
	kstreams *kstreamsApp
}

// runResult is one run of one scenario.
type runResult struct {
	elapsed time.Duration   // scenario process start → last output readable
	stats   childproc.Stats // of the scenario process, when the last output was read
	latency []latencyResult
	// toRunning is scenario process start → the process first said it was running (0 if
	// it never did), and cpuToRunning the CPU seconds it had spent by then.
	toRunning    time.Duration
	cpuToRunning float64
}

// latencyResult is one latency phase of a run.
type latencyResult struct {
	load     float64 // share of the run's records/s
	offered  int     // records/s
	p50, p99 time.Duration
	samples  int
}

func (r runResult) recordsPerSec(records int) float64 {
	return float64(records) / r.elapsed.Seconds()
}

// broker is a fresh in-process broker (kfake) with the input and output topics: every run
// starts from empty topics, and its memory is released when the run ends.
func broker() (*kafkaio.Embedded, error) {
	emb, err := kafkaio.StartEmbedded("127.0.0.1:0", nil)
	if err != nil {
		return nil, err
	}
	c := sarama.NewConfig()
	c.Version = sarama.V3_6_0_0
	err = kafkaio.EnsureTopics(emb.Addrs(), c, map[string]kafkaio.TopicSpec{
		inputTopic:  {Partitions: partitions, ReplicationFactor: -1},
		outputTopic: {Partitions: partitions, ReplicationFactor: -1},
	})
	if err != nil {
		emb.Close()
		return nil, err
	}
	return emb, nil
}

// releaseMemory returns the closed broker's memory before the next run measures anything.
func releaseMemory() {
	runtime.GC()
	debug.FreeOSMemory()
}

// runScenario produces the input on a fresh broker of its kind, then times one scenario
// process from its start until its last output is readable; then, if the scenario has one,
// it runs the latency phase.
func runScenario(sc scenario, run int, o options, on benchBroker) (runResult, error) {
	defer releaseMemory()
	brokers, done, err := on.fresh()
	if err != nil {
		return runResult{}, err
	}
	defer done()
	gen := newGenerator(sc.vocabulary)
	gen.json = sc.json
	var registry string
	if sc.avro {
		if gen.avro, err = newAvroInput(); err != nil {
			return runResult{}, err
		}
		defer gen.avro.close()
		registry = gen.avro.registry.URL()
	}
	check := newCountCheck(o.verify && sc.countsWords())
	want := check.wrap(sc.expect())
	if err := produceInput(brokers, gen, want, o.records, sc.closeWindows); err != nil {
		return runResult{}, err
	}
	w, err := newWatcher(brokers, check.tally())
	if err != nil {
		return runResult{}, err
	}
	defer w.close()
	dir, err := os.MkdirTemp("", "stoatflow-bench-")
	if err != nil {
		return runResult{}, err
	}
	defer os.RemoveAll(dir)
	exe, args := "", childproc.Args{Scenario: sc.name, Brokers: brokers, Dir: dir, Registry: registry, Verbose: o.verbose}
	if sc.goka != "" {
		exe, args.Scenario = o.gokaExe, sc.goka
		// goka reads its Kafka client settings from the agent config of the scenario.
		if _, err := writeScenario(sc, brokers, dir, registry); err != nil {
			return runResult{}, err
		}
	}
	if o.cpuprofile != "" {
		args.CPUProfile = filepath.Join(o.cpuprofile, fmt.Sprintf("%s-%s-run%d.pprof", sc.name, on.name(), run))
	}

	start := time.Now()
	var ch *child
	if sc.kstreams {
		ch, err = o.kstreams.start(sc, brokers, dir, o.verbose)
	} else {
		ch, err = startChild(exe, args)
	}
	if err != nil {
		return runResult{}, err
	}
	// No scenario is slower than 10,000 records/s, or something is wrong.
	deadline := start.Add(time.Minute + time.Duration(o.records)*100*time.Microsecond)
	if err := w.waitFor(want.total(), ch, deadline); err != nil {
		_ = ch.stop()
		return runResult{}, err
	}
	res := runResult{elapsed: time.Since(start)}
	if res.stats, err = ch.stats(); err != nil {
		_ = ch.stop()
		return runResult{}, err
	}
	if m := ch.running.Load(); m != nil {
		res.toRunning, res.cpuToRunning = m.at.Sub(start), m.cpu
	}
	if sc.latency {
		sent := want.total()
		for _, load := range o.latencyLoads {
			l := latencyResult{load: load, offered: max(1, int(res.recordsPerSec(o.records)*load))}
			w.sampleFrom(time.Now().UnixMilli())
			more := check.wrap(sc.expect())
			if err := feedPaced(brokers, gen, more, l.offered, o.latencyFor); err != nil {
				_ = ch.stop()
				return runResult{}, err
			}
			sent += more.total()
			if err := w.waitFor(sent, ch, time.Now().Add(30*time.Second)); err != nil {
				_ = ch.stop()
				return runResult{}, fmt.Errorf("latency phase at %.0f %% load: %w", load*100, err)
			}
			lat := w.latencies()
			l.p50, l.p99, l.samples = percentile(lat, 50), percentile(lat, 99), len(lat)
			res.latency = append(res.latency, l)
		}
	}
	if err := check.verify(); err != nil {
		_ = ch.stop()
		return runResult{}, err
	}
	return res, ch.stop()
}

// idleRSS runs the word count agent with nothing to read and returns its resident set once
// it has been running for o.idleSettle.
func idleRSS(o options, on benchBroker) (childproc.Stats, error) {
	defer releaseMemory()
	brokers, done, err := on.fresh()
	if err != nil {
		return childproc.Stats{}, err
	}
	defer done()
	dir, err := os.MkdirTemp("", "stoatflow-bench-")
	if err != nil {
		return childproc.Stats{}, err
	}
	defer os.RemoveAll(dir)
	ch, err := startChild("", childproc.Args{Scenario: "wordcount", Brokers: brokers, Dir: dir, Verbose: o.verbose})
	if err != nil {
		return childproc.Stats{}, err
	}
	if _, err := ch.await(func(ev childproc.Event) bool { return ev.Running }, time.Minute); err != nil {
		_ = ch.stop()
		return childproc.Stats{}, err
	}
	// Idle is a steady state, not an event: give the agent time to settle into it.
	time.Sleep(o.idleSettle)
	st, err := ch.stats()
	if err != nil {
		_ = ch.stop()
		return childproc.Stats{}, err
	}
	return st, ch.stop()
}

// produceInput writes n records before any clock starts, with timestamps one millisecond
// apart ending an hour ago, so that none is mistaken for a latency-phase record. With
// closeWindows it then writes one record per partition stamped past every input window's
// end and grace, so that the windowed scenario's final results are all emitted.
func produceInput(brokers []string, gen *generator, want outputCounter, n int, closeWindows bool) error {
	f, err := newFeeder(brokers)
	if err != nil {
		return err
	}
	base := time.Now().Add(-time.Hour).UnixMilli() - int64(n)
	for i := range n {
		ts := base + int64(i)
		key, value, err := gen.record(ts)
		if err == nil {
			err = f.send(key, value, ts)
		}
		if err != nil {
			_ = f.close()
			return err
		}
		want.add(key, ts)
	}
	if closeWindows {
		ts := base + int64(n) + windowSize + windowGrace
		for p := range int32(partitions) {
			key, value, err := gen.record(ts)
			if err == nil {
				err = f.sendTo(p, key, value, ts)
			}
			if err != nil {
				_ = f.close()
				return err
			}
		}
	}
	return f.close()
}

// feedPaced offers rate records/s for d, each stamped with the time it is sent.
func feedPaced(brokers []string, gen *generator, want outputCounter, rate int, d time.Duration) error {
	f, err := newFeeder(brokers)
	if err != nil {
		return err
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	sent := 0
	for now := start; now.Sub(start) < d; now = <-tick.C {
		due := int(now.Sub(start).Seconds() * float64(rate))
		for ; sent < due; sent++ {
			ts := time.Now().UnixMilli()
			key, value, err := gen.record(ts)
			if err == nil {
				err = f.send(key, value, ts)
			}
			if err != nil {
				_ = f.close()
				return err
			}
			want.add(key, ts)
		}
	}
	return f.close()
}
