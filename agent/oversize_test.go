package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
)

// TestOversizeStoreWriteDoesNotCrashLoop: a record whose key is larger than
// max.request.size, counted into a logged store. Its changelog record could never be sent:
// before, the output was skipped, the dead letter dropped and the changelog send stopped the
// agent, after every restart. Now the store write is refused before it reaches the store, as
// a processing error: the handler continues, the dead letter carries the record cut to fit
// and names it, and the agent goes on, after a restart too.
func TestOversizeStoreWriteDoesNotCrashLoop(t *testing.T) {
	for _, guarantee := range []string{"exactly_once_v2", "at_least_once"} {
		t.Run(guarantee, func(t *testing.T) {
			const maxRequest = 20000
			brokers := testBroker(t, 1, "in", "out", "dlq")
			cfg := testConfig(t, brokers, `local s = require("stoat")
local b = s.builder()
b:stream("in"):groupByKey():count({materialized = "counts"}):toStream():to("out", {valueSerde = "long"})
return b`, fmt.Sprintf(`processing.guarantee = %q
processing.exception.handler = "LogAndContinue"
production.exception.handler = "LogAndContinue"
deserialization.exception.handler = "LogAndContinue"
errors.dead.letter.queue.topic.name = "dlq"
statestore.cache.max.bytes = 0
producer.max.request.size = %d
`, guarantee, maxRequest))
			big := strings.Repeat("k", 3*maxRequest)
			send := func(keys ...string) {
				t.Helper()
				p, err := sarama.NewSyncProducer(brokers, saramaTestConfig())
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				for _, k := range keys {
					if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "in", Key: sarama.StringEncoder(k), Value: sarama.StringEncoder("v")}); err != nil {
						t.Fatal(err)
					}
				}
			}
			m := metrics.New()
			ra := startAgentWith(t, cfg, m)
			send("a", big, "b")
			out := readCommitted(t, brokers, "out", 2)
			if string(out[0].Key) != "a" || string(out[1].Key) != "b" {
				t.Fatalf("outputs %q, %q; want a, b", out[0].Key, out[1].Key)
			}
			letters := readCommitted(t, brokers, "dlq", 1)
			h := map[string]string{}
			for _, x := range letters[0].Headers {
				h[string(x.Key)] = string(x.Value)
			}
			if h[pipeline.HeaderErrorsException] != pipeline.ExceptionProcessing || h[pipeline.HeaderErrorsTopic] != "in" || h[pipeline.HeaderErrorsPartition] != "0" ||
				h[pipeline.HeaderErrorsOffset] != "1" || !strings.Contains(h[pipeline.HeaderErrorsMessage], "changelog record could never be sent") ||
				!strings.Contains(h[pipeline.HeaderErrorsMessage], "max.request.size is 20000") {
				t.Fatalf("dead-letter headers %v", h)
			}
			if h[HeaderTruncated] != fmt.Sprintf("key=%d,value=1", len(big)) || len(letters[0].Key) >= len(big) ||
				!strings.HasPrefix(big, string(letters[0].Key)) || string(letters[0].Value) != "v" {
				t.Fatalf("dead letter: %s = %q, key of %d bytes, value %q", HeaderTruncated, h[HeaderTruncated], len(letters[0].Key), letters[0].Value)
			}
			if got := testutil.ToFloat64(m.RecordsDropped.WithLabelValues("KSTREAM-AGGREGATE-0000000001", metrics.DropProcessing)); got != 1 {
				t.Fatalf("dropped{reason=processing} = %v, want 1", got)
			}
			if err := ra.stop(t); err != nil {
				t.Fatalf("the agent stopped with %v", err)
			}

			// The agent comes back, skips nothing more and goes on.
			ra = startAgent(t, cfg)
			defer ra.stop(t)
			send("a")
			out = readCommitted(t, brokers, "out", 3)
			if k, v := string(out[2].Key), out[2].Value; k != "a" || string(v) != "\x00\x00\x00\x00\x00\x00\x00\x02" {
				t.Fatalf("after the restart: %q = % x, want a = 2", k, v)
			}
			pollFor(t, 10*time.Second, "the agent running", func() bool { return ra.a.State() == StateRunning })
			if n := len(committedSoFar(t, brokers, "dlq")); n != 1 {
				t.Fatalf("%d dead letters after the restart, want 1", n)
			}
		})
	}
}
