// Package childproc is what a scenario process shares with the bench harness that starts it:
// the line protocol on its stdin and stdout, and the stats it reports about itself. The
// agent's scenario processes (bench) and goka's (bench/goka, a module of its own) speak it.
package childproc

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The topics every scenario reads and writes, on the harness's broker.
const (
	InputTopic  = "bench-in"
	OutputTopic = "bench-out"
)

// ConfigFile is the agent config the harness writes into a scenario process's directory: an
// agent's, or the one whose Kafka client settings a goka process takes.
const ConfigFile = "bench.toml"

// The parent and a child talk in lines: the parent writes commands on the child's stdin,
// the child answers with one JSON event per line on stdout (its logs go to stderr).
const (
	CmdStats = "stats" // reply with the process's stats and stop the CPU profile
	CmdStop  = "stop"  // stop processing and exit (so does the end of stdin)
)

// Event is one line a child writes.
type Event struct {
	Running bool   `json:"running,omitempty"` // the processor is consuming
	Stats   *Stats `json:"stats,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Stats is what a child process reports about itself.
type Stats struct {
	CPUSeconds   float64 `json:"cpu_seconds"` // user + system, since the process started
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	RSSBytes     int64   `json:"rss_bytes"`
	// Loop is where an agent's processing loop spent its time; nil for the other processes.
	Loop *LoopStats `json:"loop,omitempty"`
}

// LoopStats are sums from the agent's own metrics.
type LoopStats struct {
	ProcessSeconds float64 `json:"process_seconds"` // records through the topology, Lua included
	LuaSeconds     float64 `json:"lua_seconds"`     // inside Lua callbacks
	CommitSeconds  float64 `json:"commit_seconds"`  // commit barriers
	Commits        int64   `json:"commits"`
	// CommitP50 and CommitP99 are upper bounds of the commit latency quantiles (seconds),
	// from the histogram's buckets.
	CommitP50 float64 `json:"commit_p50"`
	CommitP99 float64 `json:"commit_p99"`
}

// Emitter writes events to w; a failed write means the parent is gone, and the end of stdin
// then stops the child.
func Emitter(w io.Writer) func(Event) {
	out := json.NewEncoder(w)
	return func(ev Event) { _ = out.Encode(ev) }
}

// Processor is the running process Serve answers for.
type Processor struct {
	Running <-chan struct{} // closed once it consumes
	Done    <-chan error    // its end
	Stop    func()          // asks it to end
	// Stats adds the processor's own figures to the process's stats.
	Stats func(*Stats) error
}

// Serve answers the parent's commands for p until the parent says stop, then stops p. It
// returns p's error, or an error if p ends before it is asked to.
func Serve(stdin io.Reader, emit func(Event), p Processor, stopProfile func()) error {
	cmds := make(chan string)
	go func() {
		defer close(cmds)
		lines := bufio.NewScanner(stdin)
		for lines.Scan() {
			cmds <- strings.TrimSpace(lines.Text())
		}
	}()
	running := p.Running
	for {
		select {
		case err := <-p.Done:
			if err == nil {
				err = errors.New("stopped before the harness asked it to")
			}
			return err
		case <-running:
			running = nil
			emit(Event{Running: true})
		case cmd, ok := <-cmds:
			switch {
			case !ok || cmd == CmdStop:
				p.Stop()
				select {
				case err := <-p.Done:
					return err
				case <-time.After(30 * time.Second):
					return errors.New("did not stop within 30s")
				}
			case cmd == CmdStats:
				stopProfile()
				st, err := SelfStats()
				if err != nil {
					return err
				}
				if p.Stats != nil {
					if err := p.Stats(&st); err != nil {
						return err
					}
				}
				emit(Event{Stats: &st})
			default:
				return fmt.Errorf("unknown command %q from the harness", cmd)
			}
		}
	}
}

// StartCPUProfile profiles the process into path until the returned stop, which may be
// called more than once; an empty path profiles nothing.
func StartCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	stopped := false
	return func() {
		if !stopped {
			stopped = true
			pprof.StopCPUProfile()
			f.Close()
		}
	}, nil
}

// SelfStats reads this process's CPU time (getrusage) and its peak and current resident
// set (VmHWM, VmRSS of /proc/self/status).
func SelfStats() (Stats, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return Stats{}, fmt.Errorf("getrusage: %w", err)
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return Stats{}, err
	}
	defer f.Close()
	mem, err := statusMemory(f)
	if err != nil {
		return Stats{}, fmt.Errorf("/proc/self/status: %w", err)
	}
	return Stats{CPUSeconds: cpu, PeakRSSBytes: mem["VmHWM"], RSSBytes: mem["VmRSS"]}, nil
}

// statusMemory reads the VmHWM and VmRSS lines ("VmHWM:	  123456 kB") of a status file.
func statusMemory(r io.Reader) (map[string]int64, error) {
	out := map[string]int64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmHWM" && name != "VmRSS") {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return nil, fmt.Errorf("%s: unexpected value %q", name, rest)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = kb << 10
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, name := range []string{"VmHWM", "VmRSS"} {
		if _, ok := out[name]; !ok {
			return nil, fmt.Errorf("no %s line", name)
		}
	}
	return out, nil
}

// Args tell a child what to run; the parent passes them as flags.
type Args struct {
	Scenario   string
	Brokers    []string
	Dir        string // working directory: config, script and state
	Registry   string // the schema registry's URL, for an Avro scenario
	CPUProfile string
	Verbose    bool
}

// Flags declares the child's flags on fs; brokers is the comma-separated -child.brokers,
// for the caller to split after parsing.
func (a *Args) Flags(fs *flag.FlagSet, brokers *string) {
	fs.StringVar(&a.Scenario, "child", "", "internal: run one scenario process")
	fs.StringVar(brokers, "child.brokers", "", "internal: the broker addresses")
	fs.StringVar(&a.Dir, "child.dir", "", "internal: the scenario process's directory")
	fs.StringVar(&a.CPUProfile, "child.cpuprofile", "", "internal: CPU profile file")
	fs.StringVar(&a.Registry, "child.registry", "", "internal: the schema registry's URL")
}

// Argv is the command line that passes a to a child.
func (a Args) Argv() []string {
	argv := []string{"-child", a.Scenario, "-child.brokers", strings.Join(a.Brokers, ","), "-child.dir", a.Dir}
	if a.CPUProfile != "" {
		argv = append(argv, "-child.cpuprofile", a.CPUProfile)
	}
	if a.Registry != "" {
		argv = append(argv, "-child.registry", a.Registry)
	}
	if a.Verbose {
		argv = append(argv, "-v")
	}
	return argv
}
