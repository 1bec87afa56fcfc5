package kafkatest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// jvmOptions are the options of every JVM of Kafka's: a small heap (docs/testing.md has the
// measurements), the serial collector (fewer threads and less memory than G1 on a heap
// this size), and the client compiler only: C2 compiling the broker's start-up code doubled
// a 3-node cluster's start on a busy 2-core machine (30 s against 14 s), for peak speed a
// test cluster does not need.
var jvmOptions = []string{
	"-Xms64m", "-Xmx384m",
	"-XX:+UseSerialGC",
	"-XX:TieredStopAtLevel=1",
	"-Djava.awt.headless=true",
}

// serverJVMOptions replace jvmOptions for the brokers of a Spec.Server cluster: the heap and
// the performance options Apache Kafka's kafka-server-start.sh and kafka-run-class.sh give a
// broker (KAFKA_HEAP_OPTS, KAFKA_JVM_PERFORMANCE_OPTS), both JIT compilers left on.
var serverJVMOptions = []string{
	"-Xms1g", "-Xmx1g",
	"-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
	"-XX:+ExplicitGCInvokesConcurrent",
	"-Djava.awt.headless=true",
}

var (
	// errExited: a node's JVM ended while it was expected to start.
	errExited = errors.New("node exited")
	// errPortTaken: a node could not bind its port (another process took it after it was
	// picked).
	errPortTaken = errors.New("port taken")
)

// procState is what /proc says of a node's process.
type procState int

const (
	gone    procState = iota // no such process (or a zombie not yet reaped)
	running                  // running or sleeping
	stopped                  // stopped by SIGSTOP
)

func (s procState) String() string {
	return [...]string{"gone", "running", "stopped"}[s]
}

// ServerJVMOptions are the options of a Spec.Server cluster's brokers, for a report to name.
func ServerJVMOptions() []string { return slices.Clone(serverJVMOptions) }

// java runs a JVM of Kafka's with the options base and opts, and args.
func (c *Cluster) java(dir string, base, opts []string, args ...string) *exec.Cmd {
	cmdArgs := append(append([]string{}, base...), opts...)
	if c.rt.archive != "" {
		cmdArgs = append(cmdArgs, "-XX:SharedArchiveFile="+c.rt.archive)
	}
	cmdArgs = append(cmdArgs,
		"-Dlog4j2.configurationFile="+filepath.Join(c.dir, "log4j2.properties"),
		"-cp", c.rt.classpath)
	cmd := exec.Command(c.rt.java, append(cmdArgs, args...)...)
	cmd.Dir = dir
	return cmd
}

// format formats node id's storage with the cluster's ID and transaction.version.
func (c *Cluster) format(id int) error {
	cmd := c.java(c.nodeDir(id), jvmOptions, nil, "kafka.tools.StorageTool", "format",
		"--config", c.propertiesFile(id), "--cluster-id", c.info.ClusterID,
		"--feature", fmt.Sprintf("transaction.version=%d", c.info.Spec.TransactionVersion))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kafkatest: formatting node %d (%s): %v\n%s", id, c.propertiesFile(id), err, out)
	}
	return nil
}

// startNode starts node id's JVM, its output appended to its log, and records its pid.
func (c *Cluster) startNode(id int) error {
	log, err := os.OpenFile(c.LogFile(id), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	fmt.Fprintf(log, "==== kafkatest: starting node %d at %s\n", id, time.Now().Format(time.RFC3339Nano))
	base := jvmOptions
	if c.info.Spec.Server {
		base = serverJVMOptions
	}
	cmd := c.java(c.nodeDir(id), base, c.brokerJVM, "kafka.Kafka", c.propertiesFile(id))
	cmd.Stdout, cmd.Stderr = log, log
	if c.tied {
		err = startTied(cmd)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		log.Close()
		return fmt.Errorf("kafkatest: starting node %d: %w", id, err)
	}
	// Reap it whenever it ends, killed by whichever process.
	go func() {
		_ = cmd.Wait()
		log.Close()
	}()
	pid := strconv.Itoa(cmd.Process.Pid)
	if err := os.WriteFile(filepath.Join(c.nodeDir(id), "pid"), []byte(pid+"\n"), 0o644); err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	return nil
}

// state reads node id's pid file and what /proc says of that process. A pid reused by
// another process since is told apart by its command line, which names the node's
// server.properties.
func (c *Cluster) state(id int) (pid int, st procState) {
	b, err := os.ReadFile(filepath.Join(c.nodeDir(id), "pid"))
	if err != nil {
		return 0, gone
	}
	pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, gone
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(cmdline, []byte(c.propertiesFile(id))) {
		return pid, gone
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return pid, gone
	}
	// pid (comm) S ...: the state follows the last ')' (comm may hold one).
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return pid, gone
	}
	switch stat[i+2] {
	case 'Z', 'X', 'x':
		return pid, gone
	case 'T', 't':
		return pid, stopped
	}
	return pid, running
}

// signal sends sig to node id's process, if it is there.
func (c *Cluster) signal(id int, sig syscall.Signal) error {
	pid, st := c.state(id)
	if st == gone {
		return nil
	}
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kafkatest: %v to node %d (pid %d): %w", sig, id, pid, err)
	}
	return nil
}

// waitState waits until node id's process is in state want.
func (c *Cluster) waitState(id int, want procState, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		_, st := c.state(id)
		if st == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kafkatest: node %d still %v after %v (wanted %v)", id, st, within, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killNode kills node id's process (SIGKILL) and waits until it is gone.
func (c *Cluster) killNode(id int) error {
	if err := c.signal(id, syscall.SIGKILL); err != nil {
		return err
	}
	return c.waitState(id, gone, 30*time.Second)
}

// shutdownNode stops node id the way an operator would (SIGTERM: a controlled shutdown that
// moves its leaderships away first), killing it if that takes longer than a minute.
func (c *Cluster) shutdownNode(id int) error {
	if _, st := c.state(id); st == stopped {
		if err := c.signal(id, syscall.SIGCONT); err != nil {
			return err
		}
	}
	if err := c.signal(id, syscall.SIGTERM); err != nil {
		return err
	}
	if c.waitState(id, gone, time.Minute) == nil {
		return nil
	}
	return c.killNode(id)
}

// logTail is the end of node id's log, for an error.
func (c *Cluster) logTail(id int) string {
	b, _ := os.ReadFile(c.LogFile(id))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}

// exitError is the error of node id's JVM having ended while it was expected to start.
func (c *Cluster) exitError(id int) error {
	tail := c.logTail(id)
	err := fmt.Errorf("kafkatest: node %d: %w while starting (log %s):\n%s", id, errExited, c.LogFile(id), tail)
	if strings.Contains(tail, "Address already in use") {
		return fmt.Errorf("%w: %w", errPortTaken, err)
	}
	return err
}

// startTied starts cmd so that it is killed when this process dies: Pdeathsig fires when the
// thread that started the child ends, so every such child is started from one goroutine
// locked to its thread for the life of the process.
func startTied(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	req := spawnRequest{cmd: cmd, done: make(chan error)}
	spawner() <- req
	return <-req.done
}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var spawner = sync.OnceValue(func() chan<- spawnRequest {
	reqs := make(chan spawnRequest)
	go func() {
		goruntime.LockOSThread() // never unlocked: the thread lives as long as the process
		for r := range reqs {
			r.done <- r.cmd.Start()
		}
	}()
	return reqs
})
