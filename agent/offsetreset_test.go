package agent

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// auto.offset.reset = latest starts a fresh application at the log end, except for a
// source with a policy of its own (offsetReset = earliest), which reads its topic whole.
func TestAutoOffsetResetLatestAndASourcePolicy(t *testing.T) {
	autoOffsetResetLatestAndASourcePolicy(t, onKfake(t, 1, "old", "keep", "out"))
}

func autoOffsetResetLatestAndASourcePolicy(t *testing.T, b *brokerUnderTest) {
	brokers, old, out := b.brokers, b.topic(t, "old"), b.topic(t, "out")
	sendKV(t, brokers, old, 0, "a", "old-before")
	sendKV(t, brokers, b.topic(t, "keep"), 0, "b", "keep-before")
	script := `local s = require("stoat")
local b = s.builder()
b:stream("old"):to("out")
b:stream("keep", {offsetReset = s.AutoOffsetReset.earliest()}):to("out")
return b`
	ra := startAgent(t, b.config(t, script, `auto.offset.reset = "latest"`))
	defer func() { _ = ra.stop(t) }()
	// The log end is read when the partition's fetching starts, a moment after RUNNING:
	// send until a record arrives.
	var got []*sarama.ConsumerMessage
	deadline := time.Now().Add(30 * time.Second)
	for sent := 1; !hasValue("old-after")(got) || !hasValue("keep-before")(got); sent++ {
		if time.Now().After(deadline) {
			t.Fatal("no record written after the start reached out")
		}
		sendKV(t, brokers, old, 0, "a", "old-after")
		// keep-before and the records sent, but the first, which may have gone before the start.
		got = readAll(t, brokers, out, sent)
	}
	if hasValue("old-before")(got) {
		t.Fatal("auto.offset.reset = latest: a record written before the application started was processed")
	}
}

// offsetReset = none on a partition without a committed offset stops the application in
// ERROR, naming the topic-partition.
func TestOffsetResetNoneStopsTheAgent(t *testing.T) {
	offsetResetNoneStopsTheAgent(t, onKfake(t, 1, "in", "out"))
}

func offsetResetNoneStopsTheAgent(t *testing.T, b *brokerUnderTest) {
	script := `local s = require("stoat")
local b = s.builder()
b:stream("in", {offsetReset = "none"}):to("out")
return b`
	a, err := New(b.config(t, script, ""), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = a.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), b.topic(t, "in")+"-0") || !strings.Contains(err.Error(), "offset reset policy is none") {
		t.Fatalf("Run = %v, want the missing offset of in-0 named", err)
	}
	if st := a.State(); st != StateError {
		t.Fatalf("state %s, want ERROR", st)
	}
}
