package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stoatflow/stoatflow/bench/internal/childproc"
)

// child is a scenario process as the parent sees it. Each scenario runs in its own process
// so that its peak RSS and CPU time are its own, apart from the broker and the harness.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events chan childproc.Event
	exited chan struct{} // closed once the process has exited; err is set then
	err    error
	stderr *tailBuffer
	// external: the process does not report its own stats (a JVM); they are read from /proc.
	external bool
	// running is when the process first said it was running, and its CPU time then.
	running atomic.Pointer[runningMark]
}

// runningMark is a scenario process's start-up: when it was first running, and the CPU
// seconds it had spent by then.
type runningMark struct {
	at  time.Time
	cpu float64
}

// startChild starts exe as a scenario process; "" is this binary, which runs the agent's.
func startChild(exe string, args childproc.Args) (*child, error) {
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	return startProcess(exec.Command(exe, args.Argv()...), args.Scenario, args.Verbose, false)
}

// startProcess starts cmd as the process of a scenario; external says that its stats are
// read from /proc rather than asked of it.
func startProcess(cmd *exec.Cmd, scenario string, verbose, external bool) (*child, error) {
	c := &child{cmd: cmd, events: make(chan childproc.Event, 16), exited: make(chan struct{}), stderr: &tailBuffer{max: 16 << 10}, external: external}
	cmd.Stderr = c.stderr
	if verbose {
		cmd.Stderr = io.MultiWriter(os.Stderr, c.stderr)
	}
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the %s process: %w", scenario, err)
	}
	go func() {
		var reported string
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			var ev childproc.Event
			if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
				reported = fmt.Sprintf("unreadable line from the %s process: %q", scenario, lines.Text())
				continue
			}
			if ev.Error != "" {
				reported = ev.Error
				continue
			}
			if ev.Running && c.running.Load() == nil {
				mark := &runningMark{at: time.Now()}
				if st, err := childproc.ProcessStats(cmd.Process.Pid); err == nil {
					mark.cpu = st.CPUSeconds
				}
				c.running.Store(mark)
			}
			c.events <- ev
		}
		werr := cmd.Wait()
		switch {
		case reported != "":
			c.err = errors.New(reported)
		case werr != nil:
			c.err = fmt.Errorf("%s process: %w; stderr: %s", scenario, werr, c.stderr.String())
		}
		close(c.exited)
	}()
	return c, nil
}

// await returns the next event that want accepts, failing if the process exits first.
func (c *child) await(want func(childproc.Event) bool, timeout time.Duration) (childproc.Event, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case ev := <-c.events:
			if want(ev) {
				return ev, nil
			}
		case <-c.exited:
			return childproc.Event{}, c.exitError()
		case <-t.C:
			return childproc.Event{}, fmt.Errorf("no answer from the scenario process within %s", timeout)
		}
	}
}

func (c *child) exitError() error {
	if c.err != nil {
		return c.err
	}
	return errors.New("the scenario process exited")
}

func (c *child) stats() (childproc.Stats, error) {
	if c.external {
		st, err := childproc.ProcessStats(c.cmd.Process.Pid)
		if err != nil {
			return childproc.Stats{}, fmt.Errorf("stats of the scenario process: %w", err)
		}
		return st, nil
	}
	if _, err := io.WriteString(c.stdin, childproc.CmdStats+"\n"); err != nil {
		return childproc.Stats{}, fmt.Errorf("ask for stats: %w", c.exitError())
	}
	ev, err := c.await(func(ev childproc.Event) bool { return ev.Stats != nil }, 30*time.Second)
	if err != nil {
		return childproc.Stats{}, err
	}
	return *ev.Stats, nil
}

// stop asks the process to shut down and waits for it; after a minute it is killed.
func (c *child) stop() error {
	_, _ = io.WriteString(c.stdin, childproc.CmdStop+"\n")
	_ = c.stdin.Close()
	select {
	case <-c.exited:
		return c.err
	case <-time.After(time.Minute):
		_ = c.cmd.Process.Kill()
		<-c.exited
		return errors.New("the scenario process did not stop within a minute and was killed")
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
