//go:build !race

// Drives sarama's producers through a failed send (see faults_test.go for why this file
// runs without the race detector).

package agent

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/metrics"
)

// parityScript counts records per key in 1 s time windows, emitting on window close. The
// first "boom" record is also sent, without a key (so that the sink needs no partition
// count), to a topic that does not exist: the broker refuses it, which fails its epoch; the
// epoch is dropped and processed again (exploded stays set, so only once).
const parityScript = `
local s = require("stoat")
local b = s.builder()
local input = b:stream("in")
input:filter(function(k, v)
  if v == "boom" and not exploded then
    exploded = true
    return true
  end
  return false
end):selectKey(function(k, v) return nil end)
  :to("missing-topic", {valueSerde = "string", keySerde = "string"})
input:groupByKey()
  :windowedBy(s.TimeWindows.ofSizeWithNoGrace(1000))
  :emitStrategy(s.EmitStrategy.onWindowClose())
  :count()
  :toStream(function(wk, n) return wk.key .. "@" .. wk.window.start end)
  :to("out", {valueSerde = "long"})
return b
`

// Issue 5: the final results are identical under at-least-once replay and exactly-once.
// Both runs get the same input with a failure injected in the middle. What is compared is
// the set of distinct (window key, final count) pairs read from "out": it must be the same
// in both runs and equal to the exact counts, with one value per window (a final result is
// never revised, and none is lost). Under exactly_once_v2 (read_committed) each window
// comes out exactly once; under at_least_once a window whose result was sent in the
// dropped epoch may come out again, with the same count.
func TestFaultParityOfFinalResultsUnderReplay(t *testing.T) {
	keys := []string{"a", "b", "c", "d"}
	want := map[string]int64{}
	for _, k := range keys {
		for w := int64(0); w < 5000; w += 1000 {
			want[fmt.Sprintf("%s@%d", k, w)] = 10
		}
	}
	want["a@2000"]++ // the boom record counts too
	results := map[string]map[string]int64{}
	for _, guarantee := range []string{"at_least_once", "exactly_once_v2"} {
		got, copies := finalResultsWithFailure(t, guarantee, keys, want)
		for k, n := range copies {
			if guarantee == "exactly_once_v2" && n != 1 {
				t.Errorf("%s: %s came out %d times, want once", guarantee, k, n)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: final results %v, want %v", guarantee, got, want)
		}
		results[guarantee] = got
		t.Logf("%s: copies per window %v", guarantee, copies)
	}
	if !reflect.DeepEqual(results["at_least_once"], results["exactly_once_v2"]) {
		t.Fatalf("results differ:\nat_least_once   %v\nexactly_once_v2 %v", results["at_least_once"], results["exactly_once_v2"])
	}
}

// finalResultsWithFailure runs parityScript under guarantee and returns each window's final
// count and how many times it came out; it fails the test if a window came out with two
// different counts or the injected failure aborted no epoch.
func finalResultsWithFailure(t *testing.T, guarantee string, keys []string, want map[string]int64) (map[string]int64, map[string]int) {
	t.Helper()
	brokers := testBroker(t, 2, "in", "out")
	cfg := testConfig(t, brokers, parityScript, fmt.Sprintf("processing.guarantee = %q\n", guarantee))
	m := metrics.New()
	ra := startAgentWith(t, cfg, m)
	prod, err := sarama.NewSyncProducer(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	send := func(from, to int64, extra ...*sarama.ProducerMessage) {
		t.Helper()
		msgs := extra
		for ts := from; ts < to; ts += 100 {
			for _, k := range keys {
				msgs = append(msgs, produceAt(t, brokers, 2, k, ts))
			}
		}
		if err := prod.SendMessages(msgs); err != nil {
			t.Fatal(err)
		}
	}
	got, copies := map[string]int64{}, map[string]int{}
	msgs := consumeAll(t, brokers, "out", readCommittedConfig())
	take := func(m *sarama.ConsumerMessage) {
		k, n := string(m.Key), int64(binary.BigEndian.Uint64(m.Value))
		if prev, seen := got[k]; seen && prev != n {
			t.Fatalf("%s: window %s came out as %d and as %d", guarantee, k, prev, n)
		}
		got[k] = n
		copies[k]++
	}
	readUntil := func(n int) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for len(got) < n {
			select {
			case m := <-msgs:
				take(m)
			case err := <-ra.done:
				t.Fatalf("%s: the agent stopped: %v; final results so far: %v", guarantee, err, got)
			case <-deadline:
				t.Fatalf("%s: final results so far: %v", guarantee, got)
			}
		}
	}
	// First half: windows [0, 1000) and [1000, 2000) close and come out.
	send(0, 2500)
	readUntil(2 * len(keys))
	// The failure lands in the middle, in the window [2000, 3000) still open.
	boom := produceAt(t, brokers, 2, "a", 2450)
	boom.Value = sarama.StringEncoder("boom")
	send(2500, 5000, boom)
	// Moves every partition's stream time past the last window.
	send(6000, 6100)
	readUntil(len(want))
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}
	// Anything more already written (a repeat, or a window that should not be closed).
	for quiet := false; !quiet; {
		select {
		case m := <-msgs:
			take(m)
		case <-time.After(time.Second):
			quiet = true
		}
	}
	if failed := testutil.ToFloat64(m.Commits.WithLabelValues(metrics.ResultFailure)); failed < 1 {
		t.Fatalf("%s: failed commits = %v, want the injected failure to drop an epoch", guarantee, failed)
	}
	return got, copies
}
