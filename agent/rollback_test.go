package agent

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
)

// typoScript fails on every record: strings have no method lowr.
const typoScript = `
local s = require("stoat")
local b = s.builder()
b:stream("in"):mapValues(function(v) return "B:" .. v:lowr() end):to("out")
return b
`

// A reloaded topology that fails on its first records is rolled back to the one it
// replaced instead of stopping the agent: logged with the error that named the typo,
// counted, and the failed epoch's records processed again by the old topology, exactly
// once under exactly-once and at least once under at-least-once. A fixed script reloads
// after that as any other.
func TestReloadRollsBackATopologyThatFailsOnProbation(t *testing.T) {
	for _, guarantee := range []string{"exactly_once_v2", "at_least_once"} {
		t.Run(guarantee, func(t *testing.T) {
			brokers := testBroker(t, 2, "in", "out")
			f := startReloadable(t, brokers, mapScript("A", ""), fmt.Sprintf("processing.guarantee = %q\ncommit.interval.ms = 50", guarantee))
			defer f.stop(t)
			const batch = 100
			produce(t, brokers, "in", 0, batch, nil, 0)
			readCommittedValues(t, brokers, "out", batch)

			f.writeScript(t, typoScript)
			if code := f.postReload(t); code != http.StatusAccepted {
				t.Fatalf("POST /-/reload: %d, want 202", code)
			}
			f.waitReloads(t, metrics.ResultSuccess, 1)
			produce(t, brokers, "in", 0, batch, nil, batch)
			produce(t, brokers, "in", 1, batch, nil, 2*batch)
			deadline := time.Now().Add(30 * time.Second)
			for testutil.ToFloat64(f.m.ReloadRollbacks) < 1 {
				if time.Now().After(deadline) {
					t.Fatalf("no rollback; log:\n%s", f.logText())
				}
				time.Sleep(10 * time.Millisecond)
			}
			log := f.logText()
			if !strings.Contains(log, "reload: the new topology failed on probation; rolling back") ||
				!strings.Contains(log, `string has no method \"lowr\"; did you mean \"lower\"?`) {
				t.Fatalf("the rollback is not logged with its cause:\n%s", log)
			}
			if ks := f.get(t, "/topology/ks"); !strings.Contains(ks, "KSTREAM-MAPVALUES") {
				t.Fatalf("/topology/ks after the rollback:\n%s", ks)
			}

			// Every record after the reload went through the old mapping.
			got := readCommittedValues(t, brokers, "out", 3*batch)
			seen := map[string]int{}
			for _, values := range got {
				for _, v := range values {
					if !strings.HasPrefix(v, "A:") {
						t.Fatalf("output %q did not come from the topology rolled back to", v)
					}
					seen[strings.TrimPrefix(v, "A:")]++
				}
			}
			for i := range 3 * batch {
				n := seen[fmt.Sprintf("v%d", i)]
				if n == 0 || guarantee == "exactly_once_v2" && n != 1 {
					t.Fatalf("input v%d appears %d times in the output under %s", i, n, guarantee)
				}
			}
			if st := f.a.State(); st != StateRunning {
				t.Fatalf("state %s after the rollback, want RUNNING", st)
			}

			// The fixed script reloads, and takes the records after it.
			f.writeScript(t, mapScript("C", ""))
			if code := f.postReload(t); code != http.StatusAccepted {
				t.Fatalf("POST /-/reload of the fix: %d, want 202", code)
			}
			f.waitReloads(t, metrics.ResultSuccess, 2)
			produce(t, brokers, "in", 1, batch, nil, 3*batch)
			got = readCommittedValues(t, brokers, "out", 4*batch)
			fixed := 0
			for _, values := range got {
				for _, v := range values {
					if strings.HasPrefix(v, "C:") {
						fixed++
					}
				}
			}
			if fixed < batch {
				t.Fatalf("%d records went through the fixed script, want at least %d", fixed, batch)
			}
		})
	}
}

// A trial ends once the reloaded topology has run for reloadProbation and committed an
// epoch of records: a failure after that follows the exception handler (stops the agent)
// and the replaced topology's runtime is closed. Failures of Kafka or of the state database
// never roll back: the replaced topology would meet them too.
func TestProbationCoversOnlyTheTopologysOwnFailuresInItsWindow(t *testing.T) {
	l := &loop{}
	recordErr := &pipeline.RecordError{Topic: "in", Partition: 0, Offset: 7, Err: &pipeline.NodeError{Node: "n", Err: errors.New("boom")}}
	l.startProbation(&reloadCandidate{})
	switch {
	case !l.rollsBack(recordErr):
		t.Fatal("a record failure on probation does not roll back")
	case !l.rollsBack(&pipeline.NodeError{Node: "n", Err: errors.New("punctuator: boom")}):
		t.Fatal("a punctuator failure on probation does not roll back")
	case l.rollsBack(kafkaio.ErrFenced), l.rollsBack(&pipeline.RecordError{Err: &kafkaio.ProduceError{}}):
		t.Fatal("a Kafka failure rolls back")
	}
	l.probation.since = time.Now().Add(-2 * reloadProbation)
	if !l.rollsBack(recordErr) {
		t.Fatal("a failure before the first committed epoch does not roll back")
	}
	l.probationCommitted()
	if l.probation != nil || l.rollsBack(recordErr) {
		t.Fatal("the trial did not end with a committed epoch after reloadProbation")
	}
	l.startProbation(&reloadCandidate{})
	l.probationCommitted()
	if l.probation == nil || !l.rollsBack(recordErr) {
		t.Fatal("the trial ended with a committed epoch before reloadProbation")
	}
}

// A reload that changes the workers and fails on probation rolls back to the workers it
// replaced, each on its own runtime with the old scripts again: as many as before, running
// every task, and every record after the reload goes through the old mapping exactly once.
func TestReloadRollsBackTheWorkersItReplaced(t *testing.T) {
	brokers := testBroker(t, 4, "in", "out")
	f := startReloadable(t, brokers, mapScript("A", ""), "num.stream.threads = 2\nprocessing.guarantee = \"exactly_once_v2\"\ncommit.interval.ms = 50")
	defer f.stop(t)
	const batch = 50
	for p := range int32(4) {
		produce(t, brokers, "in", p, batch, nil, int(p)*batch)
	}
	readCommittedValues(t, brokers, "out", 4*batch)

	f.writeScript(t, typoScript)
	f.writeConfig(t, strings.Replace(f.toml, "num.stream.threads = 2\n", "num.stream.threads = 3\n", 1))
	if code := f.postReload(t); code != http.StatusAccepted {
		t.Fatalf("POST /-/reload: %d, want 202", code)
	}
	f.waitReloads(t, metrics.ResultSuccess, 1)
	for p := range int32(4) {
		produce(t, brokers, "in", p, batch, nil, (4+int(p))*batch)
	}
	deadline := time.Now().Add(30 * time.Second)
	for testutil.ToFloat64(f.m.ReloadRollbacks) < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("no rollback; log:\n%s", f.logText())
		}
		time.Sleep(10 * time.Millisecond)
	}
	seen := map[string]int{}
	for _, values := range readCommittedValues(t, brokers, "out", 8*batch) {
		for _, v := range values {
			if !strings.HasPrefix(v, "A:") {
				t.Fatalf("output %q did not come from the topology rolled back to", v)
			}
			seen[strings.TrimPrefix(v, "A:")]++
		}
	}
	for i := range 8 * batch {
		if n := seen[fmt.Sprintf("v%d", i)]; n != 1 {
			t.Fatalf("input v%d appears %d times in the output", i, n)
		}
	}
	// The two workers run the four tasks again; the third is gone.
	var tasks []float64
	for th := range 3 {
		tasks = append(tasks, testutil.ToFloat64(f.m.ThreadTasks.WithLabelValues(strconv.Itoa(th))))
	}
	if tasks[0] != 2 || tasks[1] != 2 || tasks[2] != 0 {
		t.Fatalf("tasks per worker after the rollback %v, want [2 2 0]", tasks)
	}
	if st := f.a.State(); st != StateRunning {
		t.Fatalf("state %s after the rollback, want RUNNING", st)
	}
}
