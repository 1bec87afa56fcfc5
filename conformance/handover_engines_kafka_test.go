//go:build kafka

package conformance

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/agent"
	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/luart"
	"github.com/stoatflow/stoatflow/state"
)

// handoverAgentEnv names the config of an agent this test binary runs as a process of its
// own (to kill it with SIGKILL).
const handoverAgentEnv = "STOATFLOW_HANDOVER_AGENT_CONFIG"

func TestMain(m *testing.M) {
	if path := os.Getenv(handoverAgentEnv); path != "" {
		os.Exit(runHandoverAgent(path))
	}
	os.Exit(m.Run())
}

func runHandoverAgent(path string) int {
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	a, err := agent.New(cfg, agent.Options{Logger: logger, Stdout: io.Discard})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := a.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// handoverEngine is one side of a handover: a Kafka Streams application or a StoatFlow
// agent, each a process of its own.
type handoverEngine interface {
	name() string
	start(t *testing.T)
	// stop stops it as an operator would (Kafka Streams leaving the group, SIGTERM).
	stop(t *testing.T)
	kill(t *testing.T)
	// err is why it failed, once it did (it exited, or reported an error).
	err() error
	// finish returns its stores' contents and stops it.
	finish(t *testing.T) []Store
	// cleanup kills it if it still runs and logs its output if the test failed.
	cleanup(t *testing.T)
}

// process runs one engine's process and watches it exit.
type process struct {
	cmd    *exec.Cmd
	done   chan struct{}
	mu     sync.Mutex
	exit   error
	ending bool // a stop or kill was asked for
}

func (p *process) start(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	p.cmd, p.done, p.exit, p.ending = cmd, make(chan struct{}), nil, false
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exit = err
		p.mu.Unlock()
		close(p.done)
	}()
}

// exited is why the process is gone when nobody asked it to go, else nil.
func (p *process) exited() error {
	if p.cmd == nil {
		return nil
	}
	select {
	case <-p.done:
	default:
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ending {
		return nil
	}
	return fmt.Errorf("exited: %v", p.exit)
}

// signal sends sig and waits until the process is gone; it returns how it exited.
func (p *process) signal(t *testing.T, sig os.Signal) error {
	t.Helper()
	p.end()
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	return p.wait(t)
}

// end says the process is asked to go: its exit is no failure.
func (p *process) end() {
	p.mu.Lock()
	p.ending = true
	p.mu.Unlock()
}

func (p *process) wait(t *testing.T) error {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(handoverTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%s did not exit within %v", p.cmd.Path, handoverTimeout)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit
}

func (p *process) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// ksApp is conformance/java's App: the case's topology in a KafkaStreams instance.
type ksApp struct {
	javaDir, bootstrap string
	h                  *handover
	stateDir           string
	proc               process
	stdin              io.WriteCloser
	mu                 sync.Mutex
	lines              []string // what it printed
	failed             error
}

func (k *ksApp) name() string { return "Kafka Streams" }

func (k *ksApp) start(t *testing.T) {
	t.Helper()
	cp, err := os.ReadFile(filepath.Join(k.javaDir, "target", "classpath.txt"))
	if err != nil {
		t.Fatal(err)
	}
	k.stateDir = t.TempDir()
	classpath := filepath.Join(k.javaDir, "target", "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(cp))
	cmd := exec.Command("java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", classpath,
		"stoatflow.conformance.App", k.h.hc.name, k.bootstrap, k.h.appID, k.stateDir, k.h.prefix)
	if k.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	k.proc.start(t, cmd)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			k.mu.Lock()
			k.lines = append(k.lines, line)
			if msg, ok := strings.CutPrefix(line, "error "); ok && k.failed == nil {
				text, _ := base64.StdEncoding.DecodeString(msg)
				k.failed = errors.New(string(text))
			}
			k.mu.Unlock()
		}
	}()
}

func (k *ksApp) err() error {
	k.mu.Lock()
	failed := k.failed
	k.mu.Unlock()
	if failed != nil {
		return failed
	}
	return k.proc.exited()
}

// command sends a command and waits for the line that answers it.
func (k *ksApp) command(t *testing.T, cmd, answer string) {
	t.Helper()
	k.mu.Lock()
	from := len(k.lines)
	k.mu.Unlock()
	if _, err := io.WriteString(k.stdin, cmd+"\n"); err != nil {
		t.Fatalf("Kafka Streams: %s: %v", cmd, err)
	}
	waitFor(t, k, "answer "+answer+" to "+cmd, func() (bool, string) {
		k.mu.Lock()
		defer k.mu.Unlock()
		return slices.Contains(k.lines[from:], answer), ""
	})
}

func (k *ksApp) stop(t *testing.T) {
	t.Helper()
	k.proc.end()
	if _, err := io.WriteString(k.stdin, "stop\n"); err != nil {
		t.Fatalf("Kafka Streams: stop: %v", err)
	}
	if err := k.proc.wait(t); err != nil {
		t.Fatalf("Kafka Streams: stop: %v", err)
	}
}

func (k *ksApp) kill(t *testing.T) {
	t.Helper()
	_ = k.proc.signal(t, syscall.SIGKILL)
}

func (k *ksApp) finish(t *testing.T) []Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stores.txt")
	k.command(t, "dump "+path, "dumped")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := ReadResults(f)
	if err != nil || len(res) != 1 {
		t.Fatalf("Kafka Streams' stores: %v (%d results)", err, len(res))
	}
	k.stop(t)
	return res[0].Stores
}

func (k *ksApp) cleanup(t *testing.T) {
	if k.proc.running() {
		_ = k.proc.signal(t, syscall.SIGKILL)
	}
	if t.Failed() {
		k.mu.Lock()
		defer k.mu.Unlock()
		t.Logf("Kafka Streams printed:\n%s", strings.Join(k.lines, "\n"))
		if k.failed != nil {
			t.Logf("Kafka Streams failed: %v", k.failed)
		}
	}
}

// sfAgent is a StoatFlow agent running the case's Lua twin, its topics renamed.
type sfAgent struct {
	h         *handover
	bootstrap string
	dir       string
	script    string
	proc      process
}

func (s *sfAgent) name() string { return "StoatFlow" }

func (s *sfAgent) start(t *testing.T) {
	t.Helper()
	if s.dir == "" {
		s.prepare(t)
	}
	log, err := os.OpenFile(filepath.Join(s.dir, "agent.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), handoverAgentEnv+"="+filepath.Join(s.dir, "agent.toml"))
	cmd.Stdout, cmd.Stderr = log, log
	s.proc.start(t, cmd)
}

// prepare writes the agent's config and the case's Lua twin with its topics renamed.
func (s *sfAgent) prepare(t *testing.T) {
	t.Helper()
	s.dir = t.TempDir()
	src, err := os.ReadFile(filepath.Join("cases", s.h.hc.name+".lua"))
	if err != nil {
		t.Fatal(err)
	}
	renamed, topics := renameTopics(string(src), s.h.prefix)
	var want []string
	for _, g := range s.h.hc.groups {
		want = append(want, g...)
	}
	want = append(want, s.h.hc.outputs...)
	slices.Sort(want)
	slices.Sort(topics)
	if !slices.Equal(slices.Compact(topics), want) {
		t.Fatalf("cases/%s.lua names the topics %v, the handover case %v", s.h.hc.name, topics, want)
	}
	s.script = filepath.Join(s.dir, s.h.hc.name+".lua")
	if err := os.WriteFile(s.script, []byte(renamed), 0o644); err != nil {
		t.Fatal(err)
	}
	// Without the record cache every update reaches the output, as in TopologyTestDriver;
	// short timeouts let the other side in within seconds after a kill.
	toml := fmt.Sprintf(`[agent]
scripts = [%q]
http.listen = "127.0.0.1:0"
leave.group.on.close = true

[streams]
application.id = %q
bootstrap.servers = %q
processing.guarantee = "exactly_once_v2"
state.dir = %q
statestore.cache.max.bytes = 0
num.standby.replicas = 0
consumer.session.timeout.ms = 6000
consumer.heartbeat.interval.ms = 500
producer.transaction.timeout.ms = 5000
`, s.script, s.h.appID, s.bootstrap, filepath.Join(s.dir, "state"))
	if err := os.WriteFile(filepath.Join(s.dir, "agent.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
}

// topicLiteral is a topic a Lua twin names: the first argument of a source or a sink.
var topicLiteral = regexp.MustCompile(`(\bb:(?:stream|table|globalTable)|:to)\(\s*"([^"]*)"`)

// renameTopics prefixes the topics a Lua twin names and returns them.
func renameTopics(src, prefix string) (string, []string) {
	var topics []string
	out := topicLiteral.ReplaceAllStringFunc(src, func(m string) string {
		sub := topicLiteral.FindStringSubmatch(m)
		topics = append(topics, sub[2])
		return sub[1] + `("` + prefix + sub[2] + `"`
	})
	return out, topics
}

func (s *sfAgent) err() error {
	if err := s.proc.exited(); err != nil {
		return fmt.Errorf("%v\n%s", err, s.logTail())
	}
	return nil
}

func (s *sfAgent) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "agent.log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(len(lines)-30, 0):], "\n")
}

func (s *sfAgent) stop(t *testing.T) {
	t.Helper()
	if err := s.proc.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("StoatFlow: stop: %v\n%s", err, s.logTail())
	}
}

func (s *sfAgent) kill(t *testing.T) {
	t.Helper()
	_ = s.proc.signal(t, syscall.SIGKILL)
}

// finish stops the agent and reads its stores from its state database.
func (s *sfAgent) finish(t *testing.T) []Store {
	t.Helper()
	s.stop(t)
	rt, err := luart.New(luart.Options{DefaultKeySerde: "string", DefaultValueSerde: "string",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	b, err := rt.LoadScripts([]string{s.script})
	if err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(filepath.Join(s.dir, "state", s.h.appID, "db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stores []Store
	for _, spec := range b.Stores() {
		st, err := dumpStore(db.StoreProvider(), spec, s.h.in)
		if err != nil {
			t.Fatalf("StoatFlow's store %s: %v", spec.Name, err)
		}
		stores = append(stores, st)
	}
	return stores
}

func (s *sfAgent) cleanup(t *testing.T) {
	if s.proc.running() {
		_ = s.proc.signal(t, syscall.SIGKILL)
	}
	if t.Failed() && s.dir != "" {
		t.Logf("StoatFlow's log (the end):\n%s", s.logTail())
	}
}
