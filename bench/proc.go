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
	"time"
)

// child is a scenario process as the parent sees it. Each scenario runs in its own process
// so that its peak RSS and CPU time are its own, apart from the broker and the harness.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events chan event
	exited chan struct{} // closed once the process has exited; err is set then
	err    error
	stderr *tailBuffer
}

func startChild(args childArgs) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	argv := []string{"-child", args.scenario, "-child.brokers", strings.Join(args.brokers, ","), "-child.dir", args.dir}
	if args.cpuprofile != "" {
		argv = append(argv, "-child.cpuprofile", args.cpuprofile)
	}
	if args.registry != "" {
		argv = append(argv, "-child.registry", args.registry)
	}
	if args.verbose {
		argv = append(argv, "-v")
	}
	cmd := exec.Command(exe, argv...)
	c := &child{cmd: cmd, events: make(chan event, 16), exited: make(chan struct{}), stderr: &tailBuffer{max: 16 << 10}}
	cmd.Stderr = c.stderr
	if args.verbose {
		cmd.Stderr = io.MultiWriter(os.Stderr, c.stderr)
	}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the %s process: %w", args.scenario, err)
	}
	go func() {
		var reported string
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			var ev event
			if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
				reported = fmt.Sprintf("unreadable line from the %s process: %q", args.scenario, lines.Text())
				continue
			}
			if ev.Error != "" {
				reported = ev.Error
				continue
			}
			c.events <- ev
		}
		werr := cmd.Wait()
		switch {
		case reported != "":
			c.err = errors.New(reported)
		case werr != nil:
			c.err = fmt.Errorf("%s process: %w; stderr: %s", args.scenario, werr, c.stderr.String())
		}
		close(c.exited)
	}()
	return c, nil
}

// await returns the next event that want accepts, failing if the process exits first.
func (c *child) await(want func(event) bool, timeout time.Duration) (event, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case ev := <-c.events:
			if want(ev) {
				return ev, nil
			}
		case <-c.exited:
			return event{}, c.exitError()
		case <-t.C:
			return event{}, fmt.Errorf("no answer from the scenario process within %s", timeout)
		}
	}
}

func (c *child) exitError() error {
	if c.err != nil {
		return c.err
	}
	return errors.New("the scenario process exited")
}

func (c *child) stats() (procStats, error) {
	if _, err := io.WriteString(c.stdin, cmdStats+"\n"); err != nil {
		return procStats{}, fmt.Errorf("ask for stats: %w", c.exitError())
	}
	ev, err := c.await(func(ev event) bool { return ev.Stats != nil }, 30*time.Second)
	if err != nil {
		return procStats{}, err
	}
	return *ev.Stats, nil
}

// stop asks the process to shut down and waits for it; after a minute it is killed.
func (c *child) stop() error {
	_, _ = io.WriteString(c.stdin, cmdStop+"\n")
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
