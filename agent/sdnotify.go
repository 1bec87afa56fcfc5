package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Messages of the sd_notify protocol (man sd_notify). Several may be sent at once, joined
// by newlines, e.g. sdReady + "\nSTATUS=running"
// (STATUS= is the free-form line `systemctl status` shows).
const (
	sdReady    = "READY=1"
	sdStopping = "STOPPING=1"
	sdWatchdog = "WATCHDOG=1"
)

// sdNotify sends state to the service manager over the datagram socket named by
// $NOTIFY_SOCKET, speaking the protocol directly instead of linking libsystemd. Without the
// variable it does nothing and returns nil: that is systemd's contract for processes not
// started as Type=notify services (a terminal, a container), not a swallowed failure.
func sdNotify(state string) error {
	socket := os.Getenv("NOTIFY_SOCKET")
	if socket == "" {
		return nil
	}
	// A name starting with '@' is an abstract socket; Go's unix address handling turns the
	// '@' into the leading NUL byte Linux expects.
	if !strings.HasPrefix(socket, "/") && !strings.HasPrefix(socket, "@") {
		return fmt.Errorf("NOTIFY_SOCKET=%q: not supported yet: only unix socket paths and @abstract names are", socket)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sd_notify %q: %w", state, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify %q to %s: %w", state, socket, err)
	}
	return nil
}

// sdWatchdogInterval is how often to ping the watchdog: half of $WATCHDOG_USEC, as
// sd_watchdog_enabled(3) advises, or 0 when the watchdog is off or meant for another
// process ($WATCHDOG_PID names a different pid).
func sdWatchdogInterval() (time.Duration, error) {
	usecText := os.Getenv("WATCHDOG_USEC")
	if usecText == "" {
		return 0, nil
	}
	if pidText := os.Getenv("WATCHDOG_PID"); pidText != "" {
		pid, err := strconv.Atoi(pidText)
		if err != nil {
			return 0, fmt.Errorf("WATCHDOG_PID=%q: not a process id", pidText)
		}
		if pid != os.Getpid() {
			return 0, nil
		}
	}
	usec, err := strconv.ParseInt(usecText, 10, 64)
	if err != nil || usec <= 0 {
		return 0, fmt.Errorf("WATCHDOG_USEC=%q: want a positive number of microseconds", usecText)
	}
	return time.Duration(usec) * time.Microsecond / 2, nil
}

// sdRunWatchdog pings the systemd watchdog until ctx ends, but only while healthy reports
// true for the watchdog's timeout ($WATCHDOG_USEC): a wedged agent stops pinging and systemd
// restarts it. It returns at once when the watchdog is not enabled for this process.
func sdRunWatchdog(ctx context.Context, healthy func(timeout time.Duration) bool, logger *slog.Logger) error {
	interval, err := sdWatchdogInterval()
	if err != nil || interval == 0 {
		return err
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	watchdogLoop(ctx, ticker.C, func() bool { return healthy(2 * interval) }, logger)
	return nil
}

// watchdogHealthy is what the agent answers the watchdog: not in ERROR, and its processing
// loop is making progress (loopProgress) — it has not been in one step for longer than the
// watchdog's timeout. It logs when it starts refusing because of the loop.
func (a *Agent) watchdogHealthy(timeout time.Duration) bool {
	return a.healthyAt(time.Now(), timeout)
}

func (a *Agent) healthyAt(now time.Time, timeout time.Duration) bool {
	if a.state.Current() == StateError {
		return false
	}
	stalled := max(a.progress.stalled(now), a.workerProgress.stalled(now))
	if stalled <= timeout {
		a.progress.reported.Store(false)
		return true
	}
	if !a.progress.reported.Swap(true) {
		a.log.Error("the processing loop has been in one step for longer than the systemd watchdog timeout; no longer pinging the watchdog, so that systemd restarts the agent",
			"stalled", stalled.Round(time.Millisecond), "watchdog.timeout", timeout)
	}
	return false
}

// loopProgress is how the watchdog sees the processing loop. The loop works in steps: one
// record through the topology, a commit barrier, a punctuation, a rebalance, a reload, each
// started from its select, and a batch of changelog records restored while it rebuilds a
// corrupt state database. It makes progress while it waits for work in that select (an idle
// agent with no input is healthy) or finishes steps; it makes none while one step lasts.
// Every step is bounded — a Lua call by its budget, a broker call by its timeouts — so a
// step that outlasts the watchdog's timeout means the loop is stuck.
type loopProgress struct {
	// busySince is when the step in progress began (Unix nanoseconds), 0 while the loop
	// waits for work.
	busySince atomic.Int64
	reported  atomic.Bool // the watchdog logged the stall in progress
}

// step marks the start of a step.
func (p *loopProgress) step(now time.Time) { p.busySince.Store(now.UnixNano()) }

// wait marks the loop waiting for work.
func (p *loopProgress) wait() { p.busySince.Store(0) }

// stalled is how long the step in progress has lasted at now; 0 while the loop waits.
func (p *loopProgress) stalled(now time.Time) time.Duration {
	since := p.busySince.Load()
	if since == 0 {
		return 0
	}
	return now.Sub(time.Unix(0, since))
}

// workerProgresses are the heartbeats of the loop's workers, which the watchdog follows
// with the loop's: a worker works in steps too (a record, an inbox, a barrier's step).
type workerProgresses struct {
	mu   sync.Mutex
	list []*loopProgress
}

func (w *workerProgresses) watch(p *loopProgress) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, p)
}

func (w *workerProgresses) unwatch(p *loopProgress) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = slices.DeleteFunc(w.list, func(x *loopProgress) bool { return x == p })
}

// stalled is the longest any worker's step in progress has lasted at now.
func (w *workerProgresses) stalled(now time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var longest time.Duration
	for _, p := range w.list {
		longest = max(longest, p.stalled(now))
	}
	return longest
}

// watchdogLoop is sdRunWatchdog's loop with the clock passed in, so tests drive the ticks.
// A failed ping is logged and the loop goes on: a transient error must not turn into the
// restart that missing every later ping would cause.
func watchdogLoop(ctx context.Context, ticks <-chan time.Time, healthy func() bool, logger *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			if !healthy() {
				continue
			}
			if err := sdNotify(sdWatchdog); err != nil {
				logger.Warn("systemd watchdog ping failed", "err", err)
			}
		}
	}
}
