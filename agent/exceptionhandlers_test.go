package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
)

// handlerCase is a topology, the value that fails in it, and the handler that decides.
type handlerCase struct {
	name      string
	script    string
	bad       []byte
	handler   string // the handler key
	reason    string // the dropped-records reason
	exception string
	message   string // part of __streams.errors.message
	config    string // more [streams] config the case needs
}

var handlerCases = []handlerCase{
	{"deserialization json", `local s = require("stoat")
local b = s.builder()
b:stream("in", {valueSerde = "json"}):to("out", {valueSerde = "json"})
return b`, []byte(`{"half":`), "deserialization.exception.handler", metrics.DropDeserialization, pipeline.ExceptionDeserialization, "cannot deserialize value", ""},
	{"processing lua", `local s = require("stoat")
local b = s.builder()
b:stream("in"):mapValues(function(v)
  if v == "bad" then error("bad value") end
  return v
end):to("out")
return b`, []byte("bad"), "processing.exception.handler", metrics.DropProcessing, pipeline.ExceptionProcessing, "p.lua:4: bad value", ""},
	{"processing timeout", `local s = require("stoat")
local b = s.builder()
b:stream("in"):mapValues(function(v)
  if v == "hang" then while true do end end
  return v
end):to("out")
return b`, []byte("hang"), "processing.exception.handler", metrics.DropProcessing, pipeline.ExceptionProcessing, "time budget", ""},
	// The budget covers what a callback forwards into, so a forward loop is stopped too.
	{"processing forward loop", `local s = require("stoat")
local b = s.builder()
b:stream("in"):process({process = function(ctx, k, v)
  repeat ctx:forward(k, v) until v ~= "loop"
end}):filter(function(k, v) return v ~= "loop" end):to("out")
return b`, []byte("loop"), "processing.exception.handler", metrics.DropProcessing, pipeline.ExceptionProcessing, "p.lua:4: Lua call exceeded its time budget", ""},
	{"processing memory", `local s = require("stoat")
local b = s.builder()
b:stream("in"):mapValues(function(v)
  if v == "big" then return string.rep("x", 2^40) end
  return v
end):to("out")
return b`, []byte("big"), "processing.exception.handler", metrics.DropProcessing, pipeline.ExceptionProcessing, "p.lua:4: string.rep would build 1.0 TiB, more than the Lua memory budget", ""},
}

// node is the node the case's drops are counted at: the source that could not read the
// record, the processor whose callback failed, none for a record the broker refused, or
// anyNode when the failing callback may be either of two (a processor's forward loop may be
// stopped inside the child it forwards into).
func (tc handlerCase) node() string {
	switch {
	case tc.reason == metrics.DropDeserialization:
		return "KSTREAM-SOURCE-0000000000"
	case tc.reason == metrics.DropProduction:
		return ""
	case strings.Contains(tc.script, ":process("):
		return anyNode
	}
	return "KSTREAM-MAPVALUES-0000000001"
}

const anyNode = "*"

// droppedCount is the dropped-records counter of node and reason; of every node for anyNode.
func droppedCount(m *metrics.Metrics, node, reason string) float64 {
	if node != anyNode {
		return testutil.ToFloat64(m.RecordsDropped.WithLabelValues(node, reason))
	}
	ch := make(chan prometheus.Metric)
	go func() { m.RecordsDropped.Collect(ch); close(ch) }()
	var sum float64
	for pm := range ch {
		var x dto.Metric
		if err := pm.Write(&x); err == nil && slices.ContainsFunc(x.GetLabel(), func(l *dto.LabelPair) bool {
			return l.GetName() == "reason" && l.GetValue() == reason
		}) {
			sum += x.GetCounter().GetValue()
		}
	}
	return sum
}

// produceWithBad writes n records k0..k(n-1) to the test's topic "in" (partition 0), each
// with the headers trace=t<i> and empty (no value); record bad has the bad value.
func (b *brokerUnderTest) produceWithBad(t *testing.T, n, bad int, badValue []byte) {
	t.Helper()
	b.produceWithBadHeaders(t, n, bad, badValue, nil)
}

// produceWithBadHeaders is produceWithBad with one more header on the bad record, when given.
func (b *brokerUnderTest) produceWithBadHeaders(t *testing.T, n, bad int, badValue, badHeader []byte) {
	t.Helper()
	p, err := sarama.NewSyncProducer(b.brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var msgs []*sarama.ProducerMessage
	for i := range n {
		var v sarama.Encoder = sarama.StringEncoder(fmt.Sprintf(`"v%d"`, i))
		if i == bad {
			v = sarama.ByteEncoder(badValue)
		}
		msg := &sarama.ProducerMessage{Topic: b.topic(t, "in"), Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: v,
			Headers: []sarama.RecordHeader{{Key: []byte("trace"), Value: []byte(fmt.Sprintf("t%d", i))}, {Key: []byte("empty")}}}
		if i == bad && badHeader != nil {
			msg.Headers = append(msg.Headers, sarama.RecordHeader{Key: []byte("big"), Value: badHeader})
		}
		msgs = append(msgs, msg)
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
}

// readCommitted reads topic under read_committed until want records arrived.
func readCommitted(t *testing.T, brokers []string, topic string, want int) []*sarama.ConsumerMessage {
	t.Helper()
	c, err := sarama.NewConsumer(brokers, readCommittedConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var out []*sarama.ConsumerMessage
	deadline := time.After(30 * time.Second)
	for len(out) < want {
		select {
		case m := <-pc.Messages():
			out = append(out, m)
		case <-deadline:
			t.Fatalf("read %d committed records from %s, want %d", len(out), topic, want)
		}
	}
	return out
}

// committedEnd is the last stable offset of partition 0 of topic: the end of what
// read_committed readers can see. It stays at the first offset of an open transaction.
func committedEnd(t *testing.T, brokers []string, topic string) int64 {
	t.Helper()
	client, err := sarama.NewClient(brokers, readCommittedConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	leader, err := client.Leader(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	req := sarama.NewOffsetRequest(client.Config().Version)
	req.IsolationLevel = sarama.ReadCommitted
	req.AddBlock(topic, 0, sarama.OffsetNewest, 1)
	resp, err := leader.GetAvailableOffsets(req)
	if err != nil {
		t.Fatal(err)
	}
	block := resp.GetBlock(topic, 0)
	if block == nil || block.Err != sarama.ErrNoError {
		t.Fatalf("last stable offset of %s: %+v", topic, block)
	}
	return block.Offset
}

// committedSoFar returns the records of partition 0 of topic that read_committed readers
// see now: it appends a plain (non-transactional) marker and reads up to it, so an empty
// result means nothing was committed, not that nothing arrived yet.
func committedSoFar(t *testing.T, brokers []string, topic string) []*sarama.ConsumerMessage {
	t.Helper()
	p, err := sarama.NewSyncProducer(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const marker = "end-of-test-marker"
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder(marker)}); err != nil {
		t.Fatal(err)
	}
	ch := consumeAll(t, brokers, topic, readCommittedConfig())
	var out []*sarama.ConsumerMessage
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m := <-ch:
			if string(m.Key) == marker {
				return out
			}
			out = append(out, m)
		case <-deadline:
			t.Fatalf("the marker did not arrive in %s (read %d committed records before it)", topic, len(out))
		}
	}
}

// checkDeadLetter checks the dead letter is record k<bad> of topic in as it was read, with
// its own headers first and then Kafka Streams' error headers, in Kafka Streams' order.
func checkDeadLetter(t *testing.T, m *sarama.ConsumerMessage, tc handlerCase, in string, bad int) {
	t.Helper()
	if string(m.Key) != fmt.Sprintf("k%d", bad) || string(m.Value) != string(tc.bad) {
		t.Fatalf("dead letter %q=%q, want k%d=%q", m.Key, m.Value, bad, tc.bad)
	}
	var names []string
	h := map[string]string{}
	for _, x := range m.Headers {
		names = append(names, string(x.Key))
		h[string(x.Key)] = string(x.Value)
	}
	wantNames := []string{"trace", "empty", pipeline.HeaderErrorsException, pipeline.HeaderErrorsMessage, pipeline.HeaderErrorsStacktrace,
		pipeline.HeaderErrorsTopic, pipeline.HeaderErrorsPartition, pipeline.HeaderErrorsOffset}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("dead-letter headers %q, want %q", names, wantNames)
	}
	want := map[string]string{"trace": fmt.Sprintf("t%d", bad), "empty": "", pipeline.HeaderErrorsException: tc.exception,
		pipeline.HeaderErrorsTopic: in, pipeline.HeaderErrorsPartition: "0", pipeline.HeaderErrorsOffset: fmt.Sprint(bad)}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("header %s = %q, want %q", k, h[k], v)
		}
	}
	if !strings.Contains(h[pipeline.HeaderErrorsMessage], tc.message) || !strings.Contains(h[pipeline.HeaderErrorsStacktrace], tc.message) {
		t.Errorf("headers %s = %q, %s = %q, want both to contain %q", pipeline.HeaderErrorsMessage, h[pipeline.HeaderErrorsMessage],
			pipeline.HeaderErrorsStacktrace, h[pipeline.HeaderErrorsStacktrace], tc.message)
	}
}

// With LogAndContinue every good record is processed exactly once, the bad one is counted,
// and its dead letter is committed with the epoch.
func TestHandlerContinueExactlyOnce(t *testing.T) {
	handlerContinueExactlyOnce(t, onKfake)
}

func handlerContinueExactlyOnce(t *testing.T, broker brokerFor) {
	for _, tc := range handlerCases {
		t.Run(tc.name, func(t *testing.T) {
			const n, bad = 10, 4
			b := broker(t, 1, "in", "out", "dlq")
			brokers := b.brokers
			cfg := b.config(t, tc.script, fmt.Sprintf("processing.guarantee = \"exactly_once_v2\"\n%s = \"LogAndContinue\"\nerrors.dead.letter.queue.topic.name = \"dlq\"\n", tc.handler))
			m := metrics.New()
			ra := startAgentWith(t, cfg, m)
			defer ra.stop(t)
			b.produceWithBad(t, n, bad, tc.bad)
			out := readCommitted(t, brokers, b.topic(t, "out"), n-1)
			seen := map[string]int{}
			for _, r := range out {
				seen[string(r.Key)]++
			}
			for i := range n {
				if want := map[bool]int{true: 0, false: 1}[i == bad]; seen[fmt.Sprintf("k%d", i)] != want {
					t.Fatalf("k%d output %d times, want %d; all: %v", i, seen[fmt.Sprintf("k%d", i)], want, seen)
				}
			}
			checkDeadLetter(t, readCommitted(t, brokers, b.topic(t, "dlq"), 1)[0], tc, b.topic(t, "in"), bad)
			if st := ra.a.State(); st != StateRunning {
				t.Fatalf("state %s, want RUNNING", st)
			}
			// No epoch was dropped and replayed, so nothing was processed twice.
			pollFor(t, 10*time.Second, "all records consumed", func() bool {
				return testutil.ToFloat64(m.RecordsConsumed.WithLabelValues(b.topic(t, "in"))) == n
			})
			if got := testutil.ToFloat64(m.Commits.WithLabelValues(metrics.ResultFailure)); got != 0 {
				t.Fatalf("%v failed commits, want none", got)
			}
			if got := droppedCount(m, tc.node(), tc.reason); got != 1 {
				t.Fatalf("dropped{node=%q, reason=%q} = %v, want 1", tc.node(), tc.reason, got)
			}
		})
	}
}

// Without a dead-letter topic LogAndContinue only skips and counts (at-least-once here).
func TestHandlerContinueWithoutDeadLetterTopic(t *testing.T) {
	handlerContinueWithoutDeadLetterTopic(t, onKfake(t, 1, "in", "out"))
}

func handlerContinueWithoutDeadLetterTopic(t *testing.T, b *brokerUnderTest) {
	tc := handlerCases[2]
	cfg := b.config(t, tc.script, tc.handler+" = \"org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler\"\n")
	m := metrics.New()
	ra := startAgentWith(t, cfg, m)
	defer ra.stop(t)
	b.produceWithBad(t, 6, 2, tc.bad)
	readAll(t, b.brokers, b.topic(t, "out"), 5)
	if got := droppedCount(m, tc.node(), tc.reason); got != 1 {
		t.Fatalf("dropped{node=%q, reason=%q} = %v, want 1", tc.node(), tc.reason, got)
	}
}

// With LogAndFail the agent stops in ERROR, and the failed record is in the dead-letter
// topic, committed, under either guarantee (for a production error: a record refused
// before it was sent).
func TestHandlerFailWritesDeadLetter(t *testing.T) {
	handlerFailWritesDeadLetter(t, onKfake)
}

func handlerFailWritesDeadLetter(t *testing.T, broker brokerFor) {
	for _, tc := range append(slices.Clone(handlerCases), productionCase) {
		for _, guarantee := range []string{"at_least_once", "exactly_once_v2"} {
			t.Run(tc.name+" "+guarantee, func(t *testing.T) {
				const bad = 2
				b := broker(t, 1, "in", "out", "dlq")
				cfg := b.config(t, tc.script, fmt.Sprintf("processing.guarantee = %q\nerrors.dead.letter.queue.topic.name = \"dlq\"\n%s", guarantee, tc.config))
				ra := startAgent(t, cfg)
				b.produceWithBad(t, 5, bad, tc.bad)
				select {
				case err := <-ra.done:
					if want := fmt.Sprintf("%s-0@%d", b.topic(t, "in"), bad); err == nil || !strings.Contains(err.Error(), want) {
						t.Fatalf("err = %v, want one naming %s", err, want)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("the agent kept running after a failed record under LogAndFail")
				}
				if st := ra.a.State(); st != StateError {
					t.Fatalf("state %s, want ERROR", st)
				}
				checkDeadLetter(t, readCommitted(t, b.brokers, b.topic(t, "dlq"), 1)[0], tc, b.topic(t, "in"), bad)
			})
		}
	}
}

func TestHandleRecordErrorLeavesOtherErrorsAlone(t *testing.T) {
	cfg := testConfig(t, []string{"127.0.0.1:9092"}, "", "processing.exception.handler = \"LogAndContinue\"\ndeserialization.exception.handler = \"LogAndContinue\"\n")
	l := &loop{a: &Agent{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil)), metrics: metrics.New()}}
	msg := &pipeline.SourceRecord{Topic: "in", Offset: 3}
	for _, err := range []error{
		&pipeline.RecordError{Topic: "in", Offset: 3, Err: &pipeline.NodeError{Node: "sink", Err: &kafkaio.ProduceError{Topic: "out", Err: sarama.ErrMessageSizeTooLarge}}},
		&pipeline.RecordError{Topic: "in", Offset: 3, Err: errors.New("invalid (negative) record timestamp -1")},
		fmt.Errorf("begin transaction: %w", kafkaio.ErrFenced),
	} {
		if got := l.handleRecordError(nil, nil, msg, err); got != err {
			t.Errorf("handleRecordError(%v) = %v, want the error unchanged", err, got)
		}
	}
}

// With the embedded broker the agent creates the dead-letter topic itself.
func TestDeadLetterTopicCreatedOnEmbeddedBroker(t *testing.T) {
	emb, err := kafkaio.StartEmbedded("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	cfg := testConfig(t, emb.Addrs(), "", "errors.dead.letter.queue.topic.name = \"dead\"\n")
	prodCfg, err := kafkaio.SaramaConfig(cfg, kafkaio.RoleProducer)
	if err != nil {
		t.Fatal(err)
	}
	p, err := kafkaio.NewProducer(emb.Addrs(), prodCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	l := &loop{a: &Agent{cfg: cfg, log: slog.New(slog.NewTextHandler(io.Discard, nil)), metrics: metrics.New()},
		k: &kafkaClients{brokers: emb.Addrs(), embedded: emb, producer: p}}
	msg := &pipeline.SourceRecord{Topic: "in", Offset: 7, Key: []byte("k"), Value: []byte("{")}
	if err := l.sendDeadLetter(p, newDeadLetter(msg, pipeline.ExceptionDeserialization, errors.New("boom")), nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, emb.Addrs(), "dead", 1); string(got[0].Value) != "{" {
		t.Fatalf("dead letter value %q", got[0].Value)
	}
}

// productionCase turns the input value "big" into an output over producer.max.request.size.
var productionCase = handlerCase{
	name: "production too large",
	script: `local s = require("stoat")
local b = s.builder()
b:stream("in"):mapValues(function(v)
  if v == "big" then return string.rep("x", 20000) end
  return v
end):to("out")
return b`,
	bad: []byte("big"), handler: "production.exception.handler", reason: metrics.DropProduction,
	exception: pipeline.ExceptionProduction, message: "max.request.size", config: "producer.max.request.size = 10000\n",
}

// productionViaForwardCase is productionCase with the output forwarded by a Lua processor:
// the refused send comes back through the script's ctx:forward and is still the production
// handler's, not the processing handler's.
var productionViaForwardCase = handlerCase{
	name: "production too large through ctx:forward",
	script: `local s = require("stoat")
local b = s.builder()
b:stream("in"):process(function()
  return {process = function(ctx, k, v)
    if v == "big" then v = string.rep("x", 20000) end
    ctx:forward(k, v)
  end}
end):to("out")
return b`,
	bad: []byte("big"), handler: "production.exception.handler", reason: metrics.DropProduction,
	exception: pipeline.ExceptionProduction, message: "max.request.size", config: "producer.max.request.size = 10000\n",
}

// LogAndContinue skips an output refused for good (here: over max.request.size, refused
// before it is sent, so under exactly-once the transaction goes on), counts it, and writes
// the consumed record that produced it to the dead-letter topic; every other record arrives
// once and the agent keeps running. The processing handler stays LogAndFail: a refused send
// is not a processing error, even when a script's ctx:forward made it.
func TestProductionHandlerContinue(t *testing.T) {
	productionHandlerContinue(t, onKfake)
}

func productionHandlerContinue(t *testing.T, broker brokerFor) {
	for _, run := range []struct {
		guarantee string
		tc        handlerCase
	}{{"at_least_once", productionCase}, {"exactly_once_v2", productionCase}, {"exactly_once_v2", productionViaForwardCase}} {
		t.Run(run.guarantee+"/"+run.tc.name, func(t *testing.T) {
			guarantee, tc := run.guarantee, run.tc
			const n, bad = 10, 4
			b := broker(t, 1, "in", "out", "dlq")
			brokers := b.brokers
			cfg := b.config(t, tc.script, fmt.Sprintf("processing.guarantee = %q\n%sproduction.exception.handler = \"LogAndContinue\"\nerrors.dead.letter.queue.topic.name = \"dlq\"\n", guarantee, tc.config))
			m := metrics.New()
			ra := startAgentWith(t, cfg, m)
			defer ra.stop(t)
			b.produceWithBad(t, n, bad, tc.bad)
			wantEachOutputOnceBut(t, brokers, b.topic(t, "out"), n, bad)
			checkDeadLetter(t, readCommitted(t, brokers, b.topic(t, "dlq"), 1)[0], tc, b.topic(t, "in"), bad)
			pollFor(t, 10*time.Second, "all records consumed", func() bool {
				return testutil.ToFloat64(m.RecordsConsumed.WithLabelValues(b.topic(t, "in"))) == n
			})
			if got := droppedCount(m, tc.node(), tc.reason); got != 1 {
				t.Fatalf("dropped{node=%q, reason=%q} = %v, want 1", tc.node(), tc.reason, got)
			}
			if got := testutil.ToFloat64(m.Commits.WithLabelValues(metrics.ResultFailure)); got != 0 {
				t.Fatalf("%v failed commits, want none", got)
			}
			if st := ra.a.State(); st != StateRunning {
				t.Fatalf("state %s, want RUNNING", st)
			}
		})
	}
}

// With the default LogAndFail the same record stops the agent in ERROR, naming it.
func TestProductionHandlerFailNamesTheRecord(t *testing.T) {
	productionHandlerFailNamesTheRecord(t, onKfake(t, 1, "in", "out"))
}

func productionHandlerFailNamesTheRecord(t *testing.T, b *brokerUnderTest) {
	tc := productionCase
	const bad = 2
	cfg := b.config(t, tc.script, tc.config)
	ra := startAgent(t, cfg)
	b.produceWithBad(t, 5, bad, tc.bad)
	select {
	case err := <-ra.done:
		if want := fmt.Sprintf("%s-0@%d", b.topic(t, "in"), bad); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.message) {
			t.Fatalf("err = %v, want one naming %s and %s", err, want, tc.message)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent kept running after a refused record under LogAndFail")
	}
	if st := ra.a.State(); st != StateError {
		t.Fatalf("state %s, want ERROR", st)
	}
}

// An output the broker itself refuses (over the topic's max.message.bytes, within
// max.request.size) fails alone: the producer splits the batches it shares with the
// epoch's other records. Under at_least_once LogAndContinue skips it like any record
// refused for good, and every other record arrives; under exactly_once_v2 the refusal has
// made the transaction abortable, so the agent stops in ERROR, naming the record and how
// to avoid it, with nothing of the epoch committed and no retry epoch after epoch.
func TestProductionHandlerBrokerRefusedRecord(t *testing.T) {
	productionHandlerBrokerRefusedRecord(t, onKfake)
}

func productionHandlerBrokerRefusedRecord(t *testing.T, broker brokerFor) {
	for _, guarantee := range []string{"at_least_once", "exactly_once_v2"} {
		t.Run(guarantee, func(t *testing.T) {
			const n, bad = 10, 4
			b := broker(t, 1, "in")
			brokers, out := b.brokers, b.newTopic(t, "out", 1, map[string]string{"max.message.bytes": "10000"})
			cfg := b.config(t, productionCase.script, fmt.Sprintf("processing.guarantee = %q\nproduction.exception.handler = \"LogAndContinue\"\n", guarantee))
			m := metrics.New()
			ra := startAgentWith(t, cfg, m)
			b.produceWithBad(t, n, bad, productionCase.bad)
			if guarantee == "at_least_once" {
				defer ra.stop(t)
				wantEachOutputOnceBut(t, brokers, out, n, bad)
				pollFor(t, 10*time.Second, "the refused record counted as dropped", func() bool {
					return droppedCount(m, "", metrics.DropProduction) == 1
				})
				if st := ra.a.State(); st != StateRunning {
					t.Fatalf("state %s, want RUNNING", st)
				}
				return
			}
			select {
			case err := <-ra.done:
				if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("from record %s-0@%d", b.topic(t, "in"), bad)) || !strings.Contains(err.Error(), "keep max.request.size at or below it") {
					t.Fatalf("err = %v, want one naming the record and max.request.size", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the agent kept running after the broker refused a record of a transaction")
			}
			if st := ra.a.State(); st != StateError {
				t.Fatalf("state %s, want ERROR", st)
			}
			if got := testutil.ToFloat64(m.Commits.WithLabelValues(metrics.ResultFailure)); got != 1 {
				t.Fatalf("%v failed commits, want 1 (no retry)", got)
			}
			if got := committedSoFar(t, brokers, out); len(got) != 0 {
				t.Fatalf("%d outputs committed, want none", len(got))
			}
		})
	}
}

// deadLetterTooLarge is a record whose dead letter could be larger than
// producer.max.request.size: through its error message (a script error of 400 kB, copied
// into two headers) or through the record itself (a 20 kB value that is not JSON, over a
// 10 kB limit).
var deadLetterTooLarge = []struct {
	name, script, config string
	bad                  []byte
	reason               string
	written              bool // whether the dead letter, its error headers capped and its record cut, fits
	cut                  bool // whether its key and value are cut (HeaderTruncated)
}{
	{"huge error message", `local s = require("stoat")
local b = s.builder()
b:stream("in"):mapValues(function(v)
  if v == "bad" then error(string.rep("x", 400000)) end
  return v
end):to("out")
return b`, "processing.exception.handler = \"LogAndContinue\"\n", []byte("bad"), metrics.DropProcessing, true, false},
	{"huge record", `local s = require("stoat")
local b = s.builder()
b:stream("in", {valueSerde = "json"}):to("out", {valueSerde = "json"})
return b`, "deserialization.exception.handler = \"LogAndContinue\"\nproducer.max.request.size = 10000\n",
		append([]byte("{"), bytes.Repeat([]byte("x"), 20000)...), metrics.DropDeserialization, true, true},
	{"huge headers", `local s = require("stoat")
local b = s.builder()
b:stream("in", {valueSerde = "json"}):to("out", {valueSerde = "json"})
return b`, "deserialization.exception.handler = \"LogAndContinue\"\nproducer.max.request.size = 10000\n",
		[]byte("{"), metrics.DropDeserialization, false, false},
}

// A dead letter too large to send never stops the agent: its error headers are capped at
// pipeline.MaxErrorHeaderBytes, one still too large (the record itself is) has its key and value cut
// to fit and says so (HeaderTruncated), and one that does not fit even then (the record's
// own headers are too large) is dropped and counted with reason dead-letter while the agent
// goes on, under either guarantee.
func TestDeadLetterTooLargeDoesNotStopTheAgent(t *testing.T) {
	for _, tc := range deadLetterTooLarge {
		for _, guarantee := range []string{"at_least_once", "exactly_once_v2"} {
			t.Run(tc.name+" "+guarantee, func(t *testing.T) {
				const n, bad = 6, 2
				b := onKfake(t, 1, "in", "out", "dlq")
				brokers := b.brokers
				cfg := b.config(t, tc.script, fmt.Sprintf("processing.guarantee = %q\nerrors.dead.letter.queue.topic.name = \"dlq\"\n%s", guarantee, tc.config))
				m := metrics.New()
				ra := startAgentWith(t, cfg, m)
				defer ra.stop(t)
				if tc.name == "huge headers" {
					b.produceWithBadHeaders(t, n, bad, tc.bad, bytes.Repeat([]byte("h"), 20000))
				} else {
					b.produceWithBad(t, n, bad, tc.bad)
				}
				readCommitted(t, brokers, "out", n-1)
				pollFor(t, 10*time.Second, "all records consumed", func() bool {
					return testutil.ToFloat64(m.RecordsConsumed.WithLabelValues("in")) == n
				})
				if st := ra.a.State(); st != StateRunning {
					t.Fatalf("state %s, want RUNNING", st)
				}
				if got := droppedCount(m, anyNode, tc.reason); got != 1 {
					t.Fatalf("dropped{reason=%q} = %v, want 1", tc.reason, got)
				}
				// The dead letter is sent while the next records are processed; under
				// at-least-once it may be acknowledged only after their outputs (another
				// topic, another batch). Once it is, or it is dropped, the read below sees it.
				// The dead letter failed, not a node: it is counted under node "".
				var dropped float64
				pollFor(t, 30*time.Second, "the dead letter acknowledged or dropped", func() bool {
					dropped = testutil.ToFloat64(m.RecordsDropped.WithLabelValues("", metrics.DropDeadLetter))
					return dropped > 0 || testutil.ToFloat64(m.RecordsProduced.WithLabelValues("dlq")) > 0
				})
				letters := committedSoFar(t, brokers, "dlq")
				if !tc.written {
					if len(letters) != 0 || dropped != 1 {
						t.Fatalf("%d dead letters written, dropped{reason=dead-letter} = %v; want none written, 1 dropped", len(letters), dropped)
					}
					return
				}
				if len(letters) != 1 || dropped != 0 {
					t.Fatalf("%d dead letters written, dropped{reason=dead-letter} = %v; want 1 written, none dropped", len(letters), dropped)
				}
				var truncated string
				for _, x := range letters[0].Headers {
					if string(x.Key) == HeaderTruncated {
						truncated = string(x.Value)
					}
				}
				if want := fmt.Sprintf("key=2,value=%d", len(tc.bad)); tc.cut && (truncated != want || len(letters[0].Value) >= len(tc.bad) || string(letters[0].Key) != "k2") {
					t.Errorf("dead letter %s = %q (want %q), key %q, value of %d bytes (the record's: %d)", HeaderTruncated, truncated, want, letters[0].Key, len(letters[0].Value), len(tc.bad))
				}
				if !tc.cut && truncated != "" {
					t.Errorf("dead letter %s = %q, want none", HeaderTruncated, truncated)
				}
				for _, x := range letters[0].Headers {
					// The Lua runtime cuts the message first; the header cap bounds it anyway.
					if k := string(x.Key); (k == pipeline.HeaderErrorsMessage || k == pipeline.HeaderErrorsStacktrace) && len(x.Value) > pipeline.MaxErrorHeaderBytes {
						t.Errorf("header %s: %d bytes, want at most %d", k, len(x.Value), pipeline.MaxErrorHeaderBytes)
					}
				}
			})
		}
	}
}

// wantEachOutputOnceBut checks that topic out holds, committed, one output of each of the
// records k0 … k(n-1) but none of k<bad>.
func wantEachOutputOnceBut(t *testing.T, brokers []string, out string, n, bad int) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range readCommitted(t, brokers, out, n-1) {
		seen[string(r.Key)]++
	}
	for i := range n {
		if want := map[bool]int{true: 0, false: 1}[i == bad]; seen[fmt.Sprintf("k%d", i)] != want {
			t.Fatalf("k%d output %d times, want %d; all: %v", i, seen[fmt.Sprintf("k%d", i)], want, seen)
		}
	}
}
