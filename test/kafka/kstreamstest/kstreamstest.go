// Package kstreamstest runs a Kafka Streams 4.4 application (StreamsApp.java: a few
// topologies, group.protocol=streams) against a kafkatest cluster, for the real-broker tests
// of streams groups: what Kafka Streams declares to the broker, and groups shared by Kafka
// Streams and StoatFlow. Maven resolves Kafka Streams' jars (pom.xml) into ~/.m2; the
// classpath and the compiled class are kept in kafkatest.CacheDir()'s kstreams directory.
package kstreamstest

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

//go:embed pom.xml
var pom []byte

//go:embed StreamsApp.java
var source []byte

// build is the compiled application, made once per test binary.
var build struct {
	once      sync.Once
	classpath string
	err       error
}

// compile resolves the jars and compiles StreamsApp.java, both cached by content.
func compile() (string, error) {
	build.once.Do(func() { build.classpath, build.err = compileOnce() })
	return build.classpath, build.err
}

func compileOnce() (string, error) {
	base, err := kafkatest.CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(base), "kstreams")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	sum := sha256.Sum256(append(append([]byte{}, pom...), source...))
	key := hex.EncodeToString(sum[:8])
	cpFile := filepath.Join(dir, "classpath-"+key+".txt")
	cp, err := os.ReadFile(cpFile)
	if err != nil || !jarsExist(string(cp)) {
		mvn, err := exec.LookPath("mvn")
		if err != nil {
			return "", fmt.Errorf("%w: mvn not found (Debian package maven)", kafkatest.ErrMissingTool)
		}
		pomFile := filepath.Join(dir, "pom-"+key+".xml")
		if err := os.WriteFile(pomFile, pom, 0o644); err != nil {
			return "", err
		}
		tmp := fmt.Sprintf("%s.%d.tmp", cpFile, os.Getpid())
		if out, err := exec.Command(mvn, "-B", "-q", "-f", pomFile, "dependency:build-classpath", "-Dmdep.outputFile="+tmp).CombinedOutput(); err != nil {
			return "", fmt.Errorf("kstreamstest: resolving Kafka Streams' jars with Maven: %v\n%s", err, out)
		}
		if err := os.Rename(tmp, cpFile); err != nil {
			return "", err
		}
		if cp, err = os.ReadFile(cpFile); err != nil {
			return "", err
		}
	}
	classes := filepath.Join(dir, "classes-"+key)
	if _, err := os.Stat(filepath.Join(classes, "StreamsApp.class")); err != nil {
		javac, err := exec.LookPath("javac")
		if err != nil {
			return "", fmt.Errorf("%w: javac not found (Debian package openjdk-17-jdk-headless)", kafkatest.ErrMissingTool)
		}
		tmp, err := os.MkdirTemp(dir, "build-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(tmp)
		src := filepath.Join(tmp, "StreamsApp.java")
		if err := os.WriteFile(src, source, 0o644); err != nil {
			return "", err
		}
		out := filepath.Join(tmp, "classes")
		if b, err := exec.Command(javac, "-d", out, "-cp", strings.TrimSpace(string(cp)), src).CombinedOutput(); err != nil {
			return "", fmt.Errorf("kstreamstest: compiling StreamsApp.java: %v\n%s", err, b)
		}
		// Another test binary may have made it meanwhile: either copy is the same.
		if err := os.Rename(out, classes); err != nil && !errors.Is(err, os.ErrExist) && !isNotEmpty(err) {
			return "", err
		}
	}
	return classes + string(os.PathListSeparator) + strings.TrimSpace(string(cp)), nil
}

func isNotEmpty(err error) bool { return errors.Is(err, syscall.ENOTEMPTY) }

func jarsExist(cp string) bool {
	cp = strings.TrimSpace(cp)
	if cp == "" {
		return false
	}
	for _, jar := range strings.Split(cp, string(os.PathListSeparator)) {
		if _, err := os.Stat(jar); err != nil {
			return false
		}
	}
	return true
}

// Options start an application.
type Options struct {
	// Topology is one of StreamsApp's: wordcount, table_groupby_count, windowed, session,
	// stream_table_join, rekey_join, left_join, fk_join, global_table.
	Topology string
	// Topics name the topology's topics: in, out, table, other.
	Topics map[string]string
	// Props are Kafka Streams properties (bootstrap.servers and application.id needed;
	// group.protocol=streams is set).
	Props map[string]string
}

// App is a running Kafka Streams application.
type App struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	exit  chan struct{}
	log   *strings.Builder // stderr: Kafka Streams' log

	mu    sync.Mutex
	lines []string
	cond  *sync.Cond
}

// Start starts an application; it is killed when the test ends if still running. Without
// Java or Maven the test is skipped (failed under CI), as kafkatest does.
func Start(t testing.TB, o Options) *App {
	t.Helper()
	cp, err := compile()
	if err != nil {
		if errors.Is(err, kafkatest.ErrMissingTool) && os.Getenv("CI") == "" {
			t.Skipf("Kafka Streams test skipped: %v", err)
		}
		t.Fatal(err)
	}
	args := []string{"-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp, "StreamsApp", o.Topology}
	for _, k := range sortedKeys(o.Topics) {
		args = append(args, k+"="+o.Topics[k])
	}
	props := map[string]string{"state.dir": t.TempDir()}
	for k, v := range o.Props {
		props[k] = v
	}
	for _, k := range sortedKeys(props) {
		args = append(args, "--"+k+"="+props[k])
	}
	cmd := exec.Command("java", args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a := &App{cmd: cmd, stdin: stdin, exit: make(chan struct{}), log: &strings.Builder{}}
	a.cond = sync.NewCond(&a.mu)
	cmd.Stderr = &lockedWriter{w: a.log, mu: &a.mu}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			a.mu.Lock()
			a.lines = append(a.lines, sc.Text())
			a.cond.Broadcast()
			a.mu.Unlock()
		}
		_ = cmd.Wait()
		close(a.exit)
		a.mu.Lock()
		a.cond.Broadcast()
		a.mu.Unlock()
	}()
	t.Cleanup(func() {
		a.Kill()
		if t.Failed() {
			t.Logf("Kafka Streams application %s: stdout:\n%s\nlog (tail):\n%s", o.Topology, strings.Join(a.Lines(), "\n"), a.logTail())
		}
	})
	return a
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (a *App) logTail() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.log.String()
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return s
}

// Log is what Kafka Streams logged so far.
func (a *App) Log() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.log.String()
}

// Lines are the lines it printed so far.
func (a *App) Lines() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.lines)
}

// WaitLine waits until a printed line satisfies match (or the application ended), and
// returns it.
func (a *App) WaitLine(t testing.TB, timeout time.Duration, what string, match func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		a.mu.Lock()
		a.cond.Broadcast()
		a.mu.Unlock()
	})
	defer timer.Stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := 0; ; {
		for ; i < len(a.lines); i++ {
			if match(a.lines[i]) {
				return a.lines[i]
			}
		}
		select {
		case <-a.exit:
			t.Fatalf("Kafka Streams ended before %s; it printed:\n%s", what, strings.Join(a.lines, "\n"))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("Kafka Streams: no %s within %v; it printed:\n%s", what, timeout, strings.Join(a.lines, "\n"))
		}
		a.cond.Wait()
	}
}

// Tasks are the tasks it runs now, from its last TASKS line.
func (a *App) Tasks() (active, standby []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := len(a.lines) - 1; i >= 0; i-- {
		if l, ok := strings.CutPrefix(a.lines[i], "TASKS "); ok {
			return parseTasks(l)
		}
	}
	return nil, nil
}

// parseTasks reads "active=0_0,0_1 standby=1_0".
func parseTasks(l string) (active, standby []string) {
	for _, f := range strings.Fields(l) {
		k, v, _ := strings.Cut(f, "=")
		var list []string
		if v != "" {
			list = strings.Split(v, ",")
		}
		switch k {
		case "active":
			active = list
		case "standby":
			standby = list
		}
	}
	return active, standby
}

// Close closes it as KafkaStreams#close() does ("leave" closes it leaving the group) and
// waits until it ended.
func (a *App) Close(t testing.TB, leave bool) {
	t.Helper()
	cmd := "close\n"
	if leave {
		cmd = "leave\n"
	}
	_, _ = io.WriteString(a.stdin, cmd)
	select {
	case <-a.exit:
	case <-time.After(time.Minute):
		t.Fatal("Kafka Streams did not close within a minute")
	}
}

// Kill kills it (SIGKILL): no leave, no commit.
func (a *App) Kill() {
	select {
	case <-a.exit:
		return
	default:
	}
	_ = a.cmd.Process.Kill()
	<-a.exit
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
