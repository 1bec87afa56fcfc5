//go:build !race

// Killing the active drives sarama's transactional producer through its error paths (an
// open transaction of a dead producer), where sarama has a known data race
// (IBM/sarama#2913, see faults_test.go): this runs in make test's pass without the race
// detector, and make soak runs it longer.

package agent

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFaultKillTheActiveCycles runs three agent processes of one application. Each cycle
// kills the active with SIGKILL at a random moment while it processes (its transaction may
// be open), or freezes it with SIGSTOP, waits until a standby is the active, feeds more
// records, and starts the killed one again (or lets the frozen one go on) as a standby,
// which runs no task. The read_committed output must hold every count exactly once. make test runs 3 cycles,
// make soak STOATFLOW_SOAK_KILLS.
func TestFaultKillTheActiveCycles(t *testing.T) {
	killTheActiveCycles(t, onKfake(t, 3, "in", "out"), 3)
}

// killTheActiveCycles is TestFaultKillTheActiveCycles with cycles cycles
// (STOATFLOW_SOAK_KILLS overrides it).
func killTheActiveCycles(t *testing.T, b *brokerUnderTest, cycles int) {
	if testing.Short() {
		t.Skip("kills processes; not in -short")
	}
	if n, err := strconv.Atoi(os.Getenv("STOATFLOW_SOAK_KILLS")); err == nil && n > 0 {
		cycles = n
	}
	app := fmt.Sprintf("kill-active-%d", time.Now().UnixNano())
	var procs []*replicaProcess
	for i := range 3 {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "p.lua"), []byte(b.script(countScript)), 0o644); err != nil {
			t.Fatal(err)
		}
		p := &replicaProcess{config: filepath.Join(dir, "agent.toml"), addr: freeAddr(t)}
		toml := fmt.Sprintf(`
[agent]
scripts = ["p.lua"]
http.listen = %q
[streams]
application.id = %q
bootstrap.servers = %q
processing.guarantee = "exactly_once_v2"
commit.interval.ms = 50
state.dir = %q
group.instance.id = "replica-%d"
application.server = %q
session.timeout.ms = 6000
heartbeat.interval.ms = 500
transaction.timeout.ms = 5000
`, p.addr, app, strings.Join(b.brokers, ","), filepath.Join(dir, "state"), i, p.addr)
		if err := os.WriteFile(p.config, []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	t.Cleanup(func() {
		for _, p := range procs {
			if p.cmd != nil && p.cmd.ProcessState == nil {
				_ = p.cmd.Process.Kill()
				_ = p.cmd.Wait()
			}
		}
	})
	// The first agent alone, so it is the active; then the two standbys.
	procs[0].start(t)
	pollFor(t, 60*time.Second, "the first agent RUNNING", func() bool { return procs[0].state() == "RUNNING" })
	for _, p := range procs[1:] {
		p.start(t)
	}
	states := func() []string {
		var s []string
		for _, p := range procs {
			s = append(s, p.state())
		}
		return s
	}
	active := -1
	settled := func() bool {
		s := states()
		active = slices.Index(s, "RUNNING")
		slices.Sort(s)
		return slices.Equal(s, []string{"RUNNING", "STANDBY", "STANDBY"})
	}
	pollFor(t, 60*time.Second, "one RUNNING and two STANDBY", settled)

	const keys, per = 20, 300
	var takeovers []time.Duration
	b.produceKeys(t, per, keys, 0, "v")
	for c := range cycles {
		// The last rejoin's rebalance may still be going on.
		pollFor(t, 60*time.Second, "one RUNNING and two STANDBY", settled)
		// Fault injection: let it process for a random moment, then kill it without warning
		// or, every other cycle, freeze it (SIGSTOP: a paused VM, a starved host) until a
		// standby took over, and let it go on, as a zombie that must not commit.
		time.Sleep(time.Duration(100+rand.IntN(600)) * time.Millisecond)
		pause := c%2 == 1
		sig, what := syscall.SIGKILL, "killed"
		if pause {
			sig, what = syscall.SIGSTOP, "froze"
		}
		if err := procs[active].cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		if !pause {
			_ = procs[active].cmd.Wait()
		}
		died := time.Now()
		next := -1
		pollFor(t, 60*time.Second, "a standby to take over", func() bool {
			for i, p := range procs {
				if i != active && p.state() == "RUNNING" {
					next = i
					return true
				}
			}
			return false
		})
		takeovers = append(takeovers, time.Since(died))
		// The next slice reaches the new active while the frozen one still holds what it
		// fetched before it froze.
		b.produceKeys(t, per, keys, (c+1)*per, "v")
		if pause {
			if err := procs[active].cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
		} else {
			procs[active].start(t)
		}
		pollFor(t, 60*time.Second, "the old active back as a standby", func() bool { return procs[active].state() == "STANDBY" })
		// A standby runs no task: the frozen one closed those it ran as the active before it
		// became a standby again, and its status and metrics say so.
		if n, m := procs[active].statusTasks(), procs[active].tasks(); n != 0 || m != 0 {
			t.Fatalf("cycle %d: the old active, a standby again, shows %d tasks in /v1/status and %d in stoatflow_thread_tasks, want none", c, n, m)
		}
		t.Logf("cycle %d: %s replica-%d, replica-%d RUNNING %v later", c, what, active, next, takeovers[c].Round(10*time.Millisecond))
	}
	b.checkExactCounts(t, wantCounts((cycles+1)*per, keys))
	for _, p := range procs {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range procs {
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("agent exit: %v", err)
		}
	}
	slices.Sort(takeovers)
	t.Logf("%d kills and freezes of the active, %d records: 0 lost, 0 duplicated; death to a new RUNNING active: median %v, max %v (session.timeout.ms 6 s)",
		cycles, (cycles+1)*per, takeovers[len(takeovers)/2].Round(10*time.Millisecond), takeovers[len(takeovers)-1].Round(10*time.Millisecond))
}
