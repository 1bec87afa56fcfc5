package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"

	dto "github.com/prometheus/client_model/go"

	"github.com/stoatflow/stoatflow/agent"
	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/bench/internal/childproc"
	"github.com/stoatflow/stoatflow/metrics"
)

// runChild runs one scenario's agent (or the raw pipe) until the parent says stop.
func runChild(args childproc.Args, stdin io.Reader, stdout io.Writer) error {
	emit := childproc.Emitter(stdout)
	err := childMain(args, stdin, emit)
	if err != nil {
		emit(childproc.Event{Error: err.Error()})
	}
	return err
}

func childMain(args childproc.Args, stdin io.Reader, emit func(childproc.Event)) error {
	sc, err := scenarioNamed(args.Scenario)
	if err != nil {
		return err
	}
	cfg, err := writeScenario(sc, args.Brokers, args.Dir, args.Registry)
	if err != nil {
		return err
	}
	logger := slog.New(slog.DiscardHandler)
	if args.Verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	stopProfile, err := childproc.StartCPUProfile(args.CPUProfile)
	if err != nil {
		return err
	}
	defer stopProfile()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	running := make(chan struct{})
	done := make(chan error, 1)
	p := childproc.Processor{Running: running, Done: done, Stop: cancel}
	switch {
	case sc.pipe:
		go func() { done <- runPipe(ctx, cfg, running) }()
	case sc.txnPipe != "":
		go func() { done <- runTxnPipe(ctx, cfg, sc.txnPipe, running) }()
	default:
		m := metrics.New()
		a, err := agent.New(cfg, agent.Options{Logger: logger, Stdout: io.Discard, Metrics: m})
		if err != nil {
			return err
		}
		go func() { done <- a.Run(ctx) }()
		go func() {
			if _, err := a.WaitState(ctx, agent.StateRunning); err == nil {
				close(running)
			}
		}()
		p.Stats = func(st *childproc.Stats) (err error) {
			st.Loop, err = loopTimes(m)
			return err
		}
	}
	return childproc.Serve(stdin, emit, p, stopProfile)
}

// writeScenario writes the scenario's script and config into dir and parses the config.
func writeScenario(sc scenario, brokers []string, dir, registry string) (*config.Config, error) {
	files := []string{sc.script}
	if sc.avro {
		files = append(files, avroSchemaFile)
	}
	for _, f := range files {
		body, err := scripts.ReadFile("scripts/" + f)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, f), body, 0o644); err != nil {
			return nil, err
		}
	}
	toml := sc.agentConfig(brokers, filepath.Join(dir, "state"), sc.script, registry)
	path := filepath.Join(dir, childproc.ConfigFile)
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		return nil, err
	}
	return config.Parse([]byte(toml), dir, path)
}

// loopTimes sums what the agent's metrics say its processing loop spent its time on.
func loopTimes(m *metrics.Metrics) (*childproc.LoopStats, error) {
	families, err := m.Registry().Gather()
	if err != nil {
		return nil, fmt.Errorf("agent metrics: %w", err)
	}
	var ls childproc.LoopStats
	for _, f := range families {
		for _, x := range f.GetMetric() {
			switch f.GetName() {
			case "stoatflow_processor_process_latency_seconds":
				ls.ProcessSeconds += x.GetHistogram().GetSampleSum()
			case "stoatflow_commit_latency_seconds":
				h := x.GetHistogram()
				ls.CommitSeconds += h.GetSampleSum()
				ls.Commits += int64(h.GetSampleCount())
				ls.CommitP50 = bucketQuantile(h, 0.50)
				ls.CommitP99 = bucketQuantile(h, 0.99)
			case "stoatflow_lua_execution_seconds_total":
				ls.LuaSeconds += x.GetCounter().GetValue()
			}
		}
	}
	return &ls, nil
}

// bucketQuantile is the upper bound of the bucket holding quantile q of a histogram.
func bucketQuantile(h *dto.Histogram, q float64) float64 {
	want := q * float64(h.GetSampleCount())
	for _, b := range h.GetBucket() {
		if float64(b.GetCumulativeCount()) >= want {
			return b.GetUpperBound()
		}
	}
	return math.Inf(1)
}
