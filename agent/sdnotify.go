package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
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
// true: a wedged agent stops pinging and systemd restarts it. It returns at once when the
// watchdog is not enabled for this process.
func sdRunWatchdog(ctx context.Context, healthy func() bool, logger *slog.Logger) error {
	interval, err := sdWatchdogInterval()
	if err != nil || interval == 0 {
		return err
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	watchdogLoop(ctx, ticker.C, healthy, logger)
	return nil
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
