package agent

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/metrics"
)

// boundaryScript counts words in a window and in a plain store, so that store, changelog
// and window retention keys all take part.
const boundaryScript = `local s = require("stoat")
local b = s.builder()
local words = b:stream("IN")
words:groupByKey():count({materialized = "totals"}):toStream():to("OUT", {valueSerde = "long"})
words:groupByKey():windowedBy(s.TimeWindows.ofSizeWithNoGrace(60000)):count({materialized = "windows"})
return b`

// boundaryValues are the values every numeric key is tried with: zero, negative, and the
// largest its type can hold.
func boundaryValues(k *config.Key) []string {
	huge := strconv.FormatInt(math.MaxInt64/int64(time.Millisecond), 10)
	switch k.Type {
	case config.TypeInt:
		huge = strconv.Itoa(math.MaxInt32)
	case config.TypeLong:
		huge = strconv.FormatInt(math.MaxInt64, 10)
	}
	return []string{"0", "-1", "-2", huge}
}

// Every numeric config key, at 0, negative and huge values, is either refused by validate
// with an error naming the key, the value and what is allowed, or accepted, and then an
// agent starts with it under either guarantee, processes a record and stops cleanly:
// nothing panics or hangs.
func TestNumericConfigBoundaries(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent per accepted value; not in -short")
	}
	brokers := testBroker(t, 1)
	// A few agents at a time: each mostly waits on the broker.
	running := make(chan struct{}, 4)
	n := 0
	for _, k := range config.Keys() {
		numeric := k.Type == config.TypeInt || k.Type == config.TypeLong || k.Type == config.TypeDuration
		if !numeric || k.Disposition != config.Normal {
			continue
		}
		for _, v := range boundaryValues(k) {
			for _, guarantee := range []string{"at_least_once", "exactly_once_v2"} {
				n++
				n := n
				t.Run(k.FullName()+"="+v+" "+guarantee, func(t *testing.T) {
					t.Parallel()
					running <- struct{}{}
					defer func() { <-running }()
					checkBoundary(t, brokers, k, v, guarantee, n)
				})
			}
		}
	}
}

func checkBoundary(t *testing.T, brokers []string, k *config.Key, value, guarantee string, n int) {
	in, out := fmt.Sprintf("in%d", n), fmt.Sprintf("out%d", n)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.lua"), []byte(strings.NewReplacer("IN", in, "OUT", out).Replace(boundaryScript)), 0o644); err != nil {
		t.Fatal(err)
	}
	line := k.Name + " = " + value + "\n"
	agentLine, streamsLine := "", line
	if k.Section == config.SectionAgent {
		agentLine, streamsLine = line, ""
	}
	servers := strings.Join(brokers, ",")
	if k.FullName() == "agent.embedded.partitions" {
		servers = "embedded"
	}
	// With the embedded Schema Registry, so that its keys apply too.
	toml := fmt.Sprintf(`
[agent]
scripts = ["p.lua"]
http.listen = "127.0.0.1:0"
%s
[streams]
application.id = "bounds-%d"
bootstrap.servers = %q
processing.guarantee = %q
state.dir = %q
schema.registry.url = "embedded"
%s`, agentLine, n, servers, guarantee, filepath.Join(dir, "state"), streamsLine)
	cfg, err := config.Parse([]byte(toml), dir, "agent.toml")
	if err != nil {
		msg := err.Error()
		if !strings.Contains(msg, k.FullName()) || !strings.Contains(msg, value) || !strings.Contains(msg, "must") {
			t.Fatalf("refused without naming the key, the value and what is allowed: %v", err)
		}
		return
	}
	if _, err := Validate(cfg); err != nil {
		t.Fatalf("validate: %v", err)
	}
	if servers == "embedded" {
		// Its broker lives inside the agent: starting is the check.
		ra := startAgent(t, cfg)
		if err := ra.stop(t); err != nil {
			t.Fatalf("stop: %v", err)
		}
		return
	}
	if err := kafkaio.EnsureTopics(brokers, saramaTestConfig(), map[string]kafkaio.TopicSpec{
		in: {Partitions: 1, ReplicationFactor: -1}, out: {Partitions: 1, ReplicationFactor: -1},
	}); err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	ra := startAgentWith(t, cfg, m)
	produce(t, brokers, in, 0, 1, nil, 0)
	pollFor(t, 20*time.Second, "the record consumed", func() bool {
		return testutil.ToFloat64(m.RecordsConsumed.WithLabelValues(in)) == 1
	})
	// The shutdown commits the epoch, however far away the next commit barrier is.
	if err := ra.stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
	readCommitted(t, brokers, out, 1)
}

// commit.interval.ms = 0 is Kafka Streams' "commit as often as possible": the barrier runs
// after every processed batch (and every poll.ms when idle), so under exactly-once each
// batch is visible to read_committed readers at once.
func TestCommitIntervalZeroCommitsEveryBatch(t *testing.T) {
	commitIntervalZeroCommitsEveryBatch(t, onKfake(t, 1, "in", "out"))
}

func commitIntervalZeroCommitsEveryBatch(t *testing.T, b *brokerUnderTest) {
	cfg := b.config(t, countScript, "processing.guarantee = \"exactly_once_v2\"\ncommit.interval.ms = 0\npoll.ms = 600000\n")
	m := metrics.New()
	ra := startAgentWith(t, cfg, m)
	defer ra.stop(t)
	for i := range 3 {
		b.produceKeys(t, 1, 1, i, "v")
		readCommitted(t, b.brokers, b.topic(t, "out"), i+1)
	}
	// A commit is counted once its state is applied, after readers see its transaction.
	pollFor(t, 10*time.Second, "3 commits for 3 batches", func() bool {
		return testutil.ToFloat64(m.Commits.WithLabelValues(metrics.ResultSuccess)) >= 3
	})
}
