package agent

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/pipeline"
)

const finalCountScript = `
local s = require("stoat")
local b = s.builder()
b:stream("in")
  :groupByKey()
  :windowedBy(s.TimeWindows.ofSizeWithNoGrace(1000))
  :emitStrategy(s.EmitStrategy.onWindowClose())
  :count()
  :toStream(function(wk, n) return wk.key .. "@" .. wk.window.start end)
  :to("out", {valueSerde = "long"})
return b
`

func produceAt(t *testing.T, brokers []string, partitions int32, key string, ts int64) *sarama.ProducerMessage {
	return &sarama.ProducerMessage{
		Topic: "in", Partition: pipeline.DefaultPartition([]byte(key), partitions),
		Key: sarama.StringEncoder(key), Value: sarama.StringEncoder("v"), Timestamp: time.UnixMilli(ts),
	}
}

// Final results of windows come out once, when the watermark (the slowest partition's
// stream time) closes them, and not again after a restart.
func TestWindowFinalResultsOnWatermarkExactlyOnce(t *testing.T) {
	brokers := testBroker(t, 2, "in", "out")
	cfg := testConfig(t, brokers, finalCountScript, "processing.guarantee = \"exactly_once_v2\"\n")
	ra := startAgent(t, cfg)
	prod, err := sarama.NewSyncProducer(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	keys := []string{"a", "b", "c", "d"}
	var msgs []*sarama.ProducerMessage
	for ts := int64(0); ts < 5000; ts += 100 {
		for _, k := range keys {
			msgs = append(msgs, produceAt(t, brokers, 2, k, ts))
		}
	}
	for _, k := range keys { // moves every partition's stream time past the last window
		msgs = append(msgs, produceAt(t, brokers, 2, k, 6000))
	}
	if err := prod.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for _, k := range keys {
		for w := 0; w < 5000; w += 1000 {
			want[fmt.Sprintf("%s@%d", k, w)] = 10
		}
	}
	got := map[string][]int64{}
	out := consumeAll(t, brokers, "out", readCommittedConfig())
	deadline := time.After(30 * time.Second)
	for len(got) < len(want) {
		select {
		case m := <-out:
			got[string(m.Key)] = append(got[string(m.Key)], int64(binary.BigEndian.Uint64(m.Value)))
		case <-deadline:
			t.Fatalf("final results so far: %v", got)
		}
	}
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}
	ra = startAgent(t, cfg) // a restart must not emit the final results again
	if err := prod.SendMessages([]*sarama.ProducerMessage{produceAt(t, brokers, 2, "a", 6100), produceAt(t, brokers, 2, "b", 6100)}); err != nil {
		t.Fatal(err)
	}
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}
	// A quiet moment on purpose: a result emitted again would come within it.
	drain := time.After(2 * time.Second)
	for done := false; !done; {
		select {
		case m := <-out:
			got[string(m.Key)] = append(got[string(m.Key)], int64(binary.BigEndian.Uint64(m.Value)))
		case <-drain:
			done = true
		}
	}
	for k, n := range want {
		if len(got[k]) != 1 || got[k][0] != n {
			t.Fatalf("%s: final results %v, want exactly one of %d (all: %v)", k, got[k], n, got)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("final results for windows that are not closed: %v", got)
	}
}

const suppressedHoppingScript = `
local s = require("stoat")
local b = s.builder()
b:stream("in")
  :groupByKey()
  :windowedBy(s.TimeWindows.ofSizeAndGrace(1000, 100):advanceBy(500))
  :count()
  :suppress(s.Suppressed.untilWindowCloses(s.Suppressed.BufferConfig.unbounded()))
  :toStream(function(wk) return wk.key .. "@" .. wk.window.start end)
  :to("out", {valueSerde = "long"})
return b
`

// suppressedHoppingSetup is a broker whose "in" has the given partitions, the config of
// suppressedHoppingScript under exactly_once_v2 on it, and a producer.
func suppressedHoppingSetup(t *testing.T, partitions int32) ([]string, *config.Config, sarama.SyncProducer) {
	t.Helper()
	brokers := testBroker(t, partitions, "in", "out")
	cfg := testConfig(t, brokers, suppressedHoppingScript, "processing.guarantee = \"exactly_once_v2\"\n")
	prod, err := sarama.NewSyncProducer(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prod.Close() })
	return brokers, cfg, prod
}

// Four partitions read at their own pace, the record cache on: every (key, window) that
// holds a record gets exactly one final result with its full count, none is mistaken for
// a late update of a window the watermark has closed.
func TestSuppressedHoppingWindowsAcrossPartitionsLoseNoUpdate(t *testing.T) {
	brokers, cfg, prod := suppressedHoppingSetup(t, 4)
	want := map[string]int64{}
	var msgs []*sarama.ProducerMessage
	for ts := int64(0); ts < 10_000; ts++ {
		k := fmt.Sprintf("k%d", ts*7919%97)
		msgs = append(msgs, produceAt(t, brokers, 4, k, ts))
		for start := max(0, ts-500) / 500 * 500; start <= ts; start += 500 {
			want[fmt.Sprintf("%s@%d", k, start)]++
		}
	}
	for p := range int32(4) { // closes every window on every partition
		msgs = append(msgs, &sarama.ProducerMessage{Topic: "in", Partition: p, Key: sarama.StringEncoder("end"),
			Value: sarama.StringEncoder("v"), Timestamp: time.UnixMilli(20_000)})
	}
	for i := 0; i < len(msgs); i += 1000 {
		if err := prod.SendMessages(msgs[i:min(len(msgs), i+1000)]); err != nil {
			t.Fatal(err)
		}
	}
	ra := startAgent(t, cfg)
	defer ra.stop(t)
	out := consumeAll(t, brokers, "out", readCommittedConfig())
	got := map[string][]int64{}
	deadline := time.After(60 * time.Second)
	for len(got) < len(want) {
		select {
		case m := <-out:
			got[string(m.Key)] = append(got[string(m.Key)], int64(binary.BigEndian.Uint64(m.Value)))
		case <-deadline:
			t.Fatalf("%d of %d final results before the deadline", len(got), len(want))
		}
	}
	for k, n := range want {
		if len(got[k]) != 1 || got[k][0] != n {
			t.Fatalf("%s: final results %v, want exactly one of %d", k, got[k], n)
		}
	}
}

// Issue 16: suppress(untilWindowCloses) takes the final results from the window store.
// Across an exactly-once restart in the middle, with windows still open on both sides of
// it, every (key, window) gets exactly one final result with its full count, carrying the
// headers of the window's latest record.
func TestSuppressedWindowsFromTheWindowStoreAcrossARestart(t *testing.T) {
	brokers, cfg, prod := suppressedHoppingSetup(t, 2)
	want := map[string]int64{}
	lastTs := map[string]int64{} // the latest record of each window
	send := func(from, to int64) {
		t.Helper()
		var msgs []*sarama.ProducerMessage
		for ts := from; ts < to; ts++ {
			k := fmt.Sprintf("k%d", ts*7919%13)
			m := produceAt(t, brokers, 2, k, ts)
			m.Headers = []sarama.RecordHeader{{Key: []byte("ts"), Value: []byte(fmt.Sprint(ts))}}
			msgs = append(msgs, m)
			for start := max(0, ts-500) / 500 * 500; start <= ts; start += 500 {
				w := fmt.Sprintf("%s@%d", k, start)
				want[w]++
				lastTs[w] = ts
			}
		}
		if err := prod.SendMessages(msgs); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string][]string{}
	out := consumeAll(t, brokers, "out", readCommittedConfig())
	readUntil := func(n int) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for len(got) < n {
			select {
			case m := <-out:
				var h string
				for _, rh := range m.Headers {
					h += string(rh.Key) + "=" + string(rh.Value)
				}
				got[string(m.Key)] = append(got[string(m.Key)], fmt.Sprintf("%d %s", binary.BigEndian.Uint64(m.Value), h))
			case <-deadline:
				t.Fatalf("%d of %d final results before the deadline", len(got), n)
			}
		}
	}
	ra := startAgent(t, cfg)
	send(0, 3000)
	readUntil(20) // some windows closed, later ones still open
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}
	ra = startAgent(t, cfg)
	defer ra.stop(t)
	send(3000, 6000)
	for p := range int32(2) { // closes every window on every partition
		if _, _, err := prod.SendMessage(&sarama.ProducerMessage{Topic: "in", Partition: p, Key: sarama.StringEncoder("end"),
			Value: sarama.StringEncoder("v"), Timestamp: time.UnixMilli(20_000)}); err != nil {
			t.Fatal(err)
		}
	}
	readUntil(len(want))
	// A quiet moment on purpose: a result emitted twice would come within it.
	quiet := time.After(time.Second)
	for done := false; !done; {
		select {
		case m := <-out:
			t.Fatalf("a result after all of them: %s", m.Key)
		case <-quiet:
			done = true
		}
	}
	for w, n := range want {
		if exp := []string{fmt.Sprintf("%d ts=%d", n, lastTs[w])}; !reflect.DeepEqual(got[w], exp) {
			t.Fatalf("%s: final results %q, want %q", w, got[w], exp)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d final results, want %d", len(got), len(want))
	}
}
