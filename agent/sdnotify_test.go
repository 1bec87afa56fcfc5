package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// listenNotify opens a datagram socket playing systemd's part and points NOTIFY_SOCKET at it.
func listenNotify(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatalf("listen %s: %v", name, err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", name)
	return conn
}

// readNotify returns the next datagram, failing the test if none arrives before a deadline.
func readNotify(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	n, err := conn.Read(buf)
	if err != nil {
		t.Fatalf("read notification: %v", err)
	}
	return string(buf[:n])
}

// drain returns the datagrams queued before a sentinel it sends itself: unix datagram
// sockets keep order, so this proves nothing else was queued without waiting for silence.
func drain(t *testing.T, conn *net.UnixConn) []string {
	t.Helper()
	const sentinel = "X-TEST-SENTINEL=1"
	if err := sdNotify(sentinel); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		msg := readNotify(t, conn)
		if msg == sentinel {
			return got
		}
		got = append(got, msg)
	}
}

func TestSdNotifyPathSocket(t *testing.T) {
	conn := listenNotify(t, filepath.Join(t.TempDir(), "notify"))
	msg := sdReady + "\nSTATUS=processing 4 partitions"
	if err := sdNotify(msg); err != nil {
		t.Fatal(err)
	}
	if got := readNotify(t, conn); got != msg {
		t.Fatalf("received %q, want %q", got, msg)
	}
	if err := sdNotify(sdStopping); err != nil {
		t.Fatal(err)
	}
	if got := readNotify(t, conn); got != "STOPPING=1" {
		t.Fatalf("received %q", got)
	}
}

func TestSdNotifyAbstractSocket(t *testing.T) {
	conn := listenNotify(t, fmt.Sprintf("@stoatflow-test-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := sdNotify(sdReady); err != nil {
		t.Fatal(err)
	}
	if got := readNotify(t, conn); got != "READY=1" {
		t.Fatalf("received %q", got)
	}
}

func TestSdNotifyWithoutSocketIsNoOp(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if err := sdNotify(sdReady); err != nil {
		t.Fatalf("no NOTIFY_SOCKET: %v", err)
	}
}

func TestSdNotifyErrors(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "vsock:2:1234")
	if err := sdNotify(sdReady); err == nil || !strings.Contains(err.Error(), "vsock:2:1234") {
		t.Errorf("vsock address: err = %v", err)
	}
	missing := filepath.Join(t.TempDir(), "absent")
	t.Setenv("NOTIFY_SOCKET", missing)
	if err := sdNotify(sdReady); err == nil || !strings.Contains(err.Error(), "READY=1") {
		t.Errorf("missing socket: err = %v", err)
	}
}

func TestSdWatchdogInterval(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	cases := []struct {
		usec, pid string
		want      time.Duration
		err       bool
	}{
		{usec: "", want: 0},
		{usec: "30000000", want: 15 * time.Second},
		{usec: "30000000", pid: self, want: 15 * time.Second},
		{usec: "30000000", pid: strconv.Itoa(os.Getpid() + 1), want: 0},
		{usec: "30000000", pid: "me", err: true},
		{usec: "thirty", err: true},
		{usec: "0", err: true},
	}
	for _, c := range cases {
		t.Setenv("WATCHDOG_USEC", c.usec)
		t.Setenv("WATCHDOG_PID", c.pid)
		got, err := sdWatchdogInterval()
		if (err != nil) != c.err || got != c.want {
			t.Errorf("USEC=%q PID=%q: %v, %v; want %v, error %v", c.usec, c.pid, got, err, c.want, c.err)
		}
	}
}

func TestWatchdogPingsOnlyWhileHealthy(t *testing.T) {
	conn := listenNotify(t, filepath.Join(t.TempDir(), "notify"))
	ticks := make(chan time.Time)
	health := []bool{false, true, false, true, true}
	calls := 0 // only the loop's goroutine touches it
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		watchdogLoop(ctx, ticks, func() bool { calls++; return health[calls-1] }, slog.New(slog.NewTextHandler(io.Discard, nil)))
		close(done)
	}()
	for range health {
		ticks <- time.Now()
	}
	// The loop only returns from its select, so the last tick's ping is sent before done.
	cancel()
	<-done
	got := drain(t, conn)
	if len(got) != 3 {
		t.Fatalf("pings = %q, want one per healthy tick (3)", got)
	}
	for _, g := range got {
		if g != "WATCHDOG=1" {
			t.Fatalf("ping %q", g)
		}
	}
}

func TestRunWatchdogPingsAtHalfInterval(t *testing.T) {
	conn := listenNotify(t, filepath.Join(t.TempDir(), "notify"))
	t.Setenv("WATCHDOG_USEC", "20000")
	t.Setenv("WATCHDOG_PID", "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// The watchdog's timeout is the whole of WATCHDOG_USEC: a wrong one gets no pings.
	go func() {
		done <- sdRunWatchdog(ctx, func(timeout time.Duration) bool { return timeout == 20*time.Millisecond }, slog.Default())
	}()
	for range 3 {
		if got := readNotify(t, conn); got != "WATCHDOG=1" {
			t.Fatalf("received %q", got)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRunWatchdogDisabled(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "")
	if err := sdRunWatchdog(context.Background(), func(time.Duration) bool { return true }, slog.Default()); err != nil {
		t.Fatal(err)
	}
	t.Setenv("WATCHDOG_USEC", "-5")
	if err := sdRunWatchdog(context.Background(), func(time.Duration) bool { return true }, slog.Default()); err == nil {
		t.Fatal("bad WATCHDOG_USEC accepted")
	}
}

// The watchdog is told the agent is healthy while its loop waits for input, however long,
// and not while one step (here a record whose callback runs for 2 s under a budget of an
// hour) lasts longer than the watchdog's timeout; once the step is over it is healthy again.
func TestWatchdogFollowsTheProcessingLoop(t *testing.T) {
	const timeout = 300 * time.Millisecond
	brokers := testBroker(t, 1, "in", "out")
	cfg := testConfigWith(t, brokers, `local s = require("stoat")
local b = s.builder()
b:stream("in"):mapValues(function(v)
  if v == "v1" then local t = os.clock() while os.clock() - t < 2 do end end
  return v
end):to("out")
return b`, `lua.call.timeout = "1h"`, "")
	ra := startAgent(t, cfg)
	defer ra.stop(t)
	// Idle, the loop still takes short steps (the one that reached RUNNING may not be over
	// yet, punctuation ticks, commits): between two of them it waits, healthy however long.
	pollFor(t, 10*time.Second, "an idle agent healthy an hour later", func() bool {
		return ra.a.healthyAt(time.Now().Add(time.Hour), timeout)
	})
	produce(t, brokers, "in", 0, 3, nil, 0)
	pollFor(t, 10*time.Second, "the watchdog to see the loop stuck", func() bool { return !ra.a.watchdogHealthy(timeout) })
	readAll(t, brokers, "out", 3)
	pollFor(t, 10*time.Second, "the watchdog to see the loop going again", func() bool { return ra.a.watchdogHealthy(timeout) })
}
