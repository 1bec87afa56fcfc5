package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/stoatflow/stoatflow/agent"
	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/metrics"
)

// The parent and a child talk in lines: the parent writes commands on the child's stdin,
// the child answers with one JSON event per line on stdout (its logs go to stderr).
const (
	cmdStats = "stats" // reply with the process's stats and stop the CPU profile
	cmdStop  = "stop"  // stop processing and exit (so does the end of stdin)
)

type event struct {
	Running bool       `json:"running,omitempty"` // the agent (or pipe) is consuming
	Stats   *procStats `json:"stats,omitempty"`
	Error   string     `json:"error,omitempty"`
}

// childArgs tell a child what to run; the parent passes them as flags.
type childArgs struct {
	scenario   string
	brokers    []string
	dir        string // working directory: config, script and state
	registry   string // the schema registry's URL, for an Avro scenario
	cpuprofile string
	verbose    bool
}

// runChild runs one scenario's agent (or the raw pipe) until the parent says stop.
func runChild(args childArgs, stdin io.Reader, stdout io.Writer) error {
	out := json.NewEncoder(stdout)
	emit := func(ev event) {
		// The parent is gone if stdout is: the end of stdin stops this process then.
		_ = out.Encode(ev)
	}
	err := childMain(args, stdin, emit)
	if err != nil {
		emit(event{Error: err.Error()})
	}
	return err
}

func childMain(args childArgs, stdin io.Reader, emit func(event)) error {
	sc, err := scenarioNamed(args.scenario)
	if err != nil {
		return err
	}
	cfg, err := writeScenario(sc, args.brokers, args.dir, args.registry)
	if err != nil {
		return err
	}
	logger := slog.New(slog.DiscardHandler)
	if args.verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	stopProfile := func() {}
	if args.cpuprofile != "" {
		f, err := os.Create(args.cpuprofile)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		stopProfile = func() {
			pprof.StopCPUProfile()
			f.Close()
			stopProfile = func() {}
		}
	}
	defer func() { stopProfile() }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	running := make(chan struct{})
	done := make(chan error, 1)
	var m *metrics.Metrics
	if sc.pipe {
		go func() { done <- runPipe(ctx, cfg, running) }()
	} else {
		m = metrics.New()
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
	}

	cmds := make(chan string)
	go func() {
		defer close(cmds)
		lines := bufio.NewScanner(stdin)
		for lines.Scan() {
			cmds <- strings.TrimSpace(lines.Text())
		}
	}()
	for {
		select {
		case err := <-done:
			if err == nil {
				err = errors.New("stopped before the harness asked it to")
			}
			return err
		case <-running:
			running = nil
			emit(event{Running: true})
		case cmd, ok := <-cmds:
			switch {
			case !ok || cmd == cmdStop:
				cancel()
				select {
				case err := <-done:
					return err
				case <-time.After(30 * time.Second):
					return errors.New("did not stop within 30s")
				}
			case cmd == cmdStats:
				stopProfile()
				st, err := selfStats()
				if err != nil {
					return err
				}
				if m != nil {
					if st.Loop, err = loopTimes(m); err != nil {
						return err
					}
				}
				emit(event{Stats: &st})
			default:
				return fmt.Errorf("unknown command %q from the harness", cmd)
			}
		}
	}
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
	return config.Parse([]byte(toml), dir, filepath.Join(dir, "bench.toml"))
}

// loopTimes sums what the agent's metrics say its processing loop spent its time on.
func loopTimes(m *metrics.Metrics) (*loopStats, error) {
	families, err := m.Registry().Gather()
	if err != nil {
		return nil, fmt.Errorf("agent metrics: %w", err)
	}
	var ls loopStats
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
