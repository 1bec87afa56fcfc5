package agent

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
)

// purchasesConfig runs scripts/purchases.lua with its schemas.
func purchasesConfig(t *testing.T, brokers []string, extra string) *config.Config {
	t.Helper()
	cfg := testConfig(t, brokers, readFile(t, "../scripts/purchases.lua"), extra)
	for _, f := range []string{"purchase.avsc", "customer-spending.avsc"} {
		if err := os.WriteFile(filepath.Join(cfg.Dir, f), []byte(readFile(t, filepath.Join("../scripts", f))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// wire frames an Avro payload in Confluent's wire format, by hand.
func wire(id int, payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), payload...)
}

func produceRaw(t *testing.T, brokers []string, topic string, key string, value []byte) {
	t.Helper()
	p, err := sarama.NewSyncProducer(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(key), Value: sarama.ByteEncoder(value)}); err != nil {
		t.Fatal(err)
	}
}

// TestAvroEndToEndOnTheEmbeddedRegistry runs the purchases example against the embedded
// registry. The purchases are registered and encoded by franz-go's sr client and hamba/avro
// used directly, and the totals decoded the same way; the store answers queries in JSON. A
// record with an unknown schema id then stops the agent, naming the record.
func TestAvroEndToEndOnTheEmbeddedRegistry(t *testing.T) {
	brokers := testBroker(t, 1, "purchases", "customer-spending")
	ra := startAgent(t, purchasesConfig(t, brokers, "schema.registry.url = \"embedded\"\nstatestore.cache.max.bytes = 0"))
	defer ra.stop(t)

	cl, err := sr.NewClient(sr.URLs(ra.a.registryURL))
	if err != nil {
		t.Fatal(err)
	}
	ordersText := readFile(t, "../scripts/purchase.avsc")
	ss, err := cl.CreateSchema(t.Context(), "purchases-value", sr.Schema{Schema: ordersText, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	orderSchema := avro.MustParse(ordersText)
	for i, o := range []map[string]any{
		{"id": int64(1), "customer": "ann", "status": "PAID", "items": []any{map[string]any{"sku": "pen", "quantity": 2, "price": 1.5}},
			"coupon": nil, "placedAt": time.UnixMilli(1_700_000_000_001)},
		{"id": int64(1)<<60 + 1, "customer": "ann", "status": "PLACED", "items": []any{map[string]any{"sku": "ink", "quantity": 1, "price": 4.0}},
			"coupon": map[string]any{"string": "WELCOME"}, "placedAt": time.UnixMilli(1_700_000_000_002)},
	} {
		payload, err := avro.Marshal(orderSchema, o)
		if err != nil {
			t.Fatal(err)
		}
		produceRaw(t, brokers, "purchases", fmt.Sprintf("o%d", i), wire(ss.ID, payload))
	}
	out := readAll(t, brokers, "customer-spending", 2)
	last := out[len(out)-1].Value
	id := int(binary.BigEndian.Uint32(last[1:5]))
	written, err := cl.SchemaByID(t.Context(), id)
	if err != nil {
		t.Fatalf("the totals' schema id %d is not in the registry: %v", id, err)
	}
	var total map[string]any
	if err := avro.Unmarshal(avro.MustParse(written.Schema), last[5:], &total); err != nil {
		t.Fatal(err)
	}
	if total["customer"] != "ann" || total["orders"] != int64(2) || total["spent"] != 7.0 || total["lastOrderId"] != int64(1)<<60+1 {
		t.Fatalf("hamba/avro read the total %v", total)
	}
	if subjects, _ := cl.Subjects(t.Context()); !strings.Contains(strings.Join(subjects, ","), "customer-spending-value") {
		t.Fatalf("subjects %v: the total's schema is not registered under customer-spending-value", subjects)
	}

	addr, _ := ra.a.HTTPAddr(t.Context())
	var got struct {
		Key   string         `json:"key"`
		Value map[string]any `json:"value"`
	}
	body := httpGet(t, "http://"+addr+"/v1/stores/customer-spending/keys/ann")
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if got.Value["orders"] != 2.0 || !strings.Contains(body, `"lastOrderId":1152921504606846977`) || !strings.Contains(body, `"coupons":["WELCOME"]`) {
		t.Fatalf("the store answered %s", body)
	}

	produceRaw(t, brokers, "purchases", "o9", wire(999, []byte{2}))
	select {
	case err := <-ra.done:
		if err == nil || !strings.Contains(err.Error(), "purchases-0@2") || !strings.Contains(err.Error(), "schema id 999") || !strings.Contains(err.Error(), "not found") {
			t.Fatalf("the agent stopped with %v", err)
		}
		ra.done <- err
	case <-time.After(30 * time.Second):
		t.Fatal("a record with an unknown schema id did not stop the agent (deserialization.exception.handler is LogAndFail)")
	}
}

// TestRegistryDownIsADeserializationError: with the registry unreachable, a record fails
// after the bounded retries as a deserialization error: LogAndContinue skips and counts it,
// its dead letter keeps its bytes and names the record, and the agent keeps running.
func TestRegistryDownIsADeserializationError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	brokers := testBroker(t, 1, "purchases", "customer-spending", "dlq")
	extra := fmt.Sprintf(`schema.registry.url = "http://%s"
max.retries = 2
"retries.wait.ms" = 10
http.connect.timeout.ms = 500
deserialization.exception.handler = "LogAndContinue"
errors.dead.letter.queue.topic.name = "dlq"`, down)
	m := metrics.New()
	ra := startAgentWith(t, purchasesConfig(t, brokers, extra), m)
	defer ra.stop(t)
	value := wire(1, []byte{2, 4})
	produceRaw(t, brokers, "purchases", "o1", value)
	letter := readAll(t, brokers, "dlq", 1)[0]
	if string(letter.Value) != string(value) {
		t.Fatalf("dead letter value % x, want the record's bytes % x", letter.Value, value)
	}
	var msg string
	for _, h := range letter.Headers {
		if string(h.Key) == pipeline.HeaderErrorsMessage {
			msg = string(h.Value)
		}
	}
	if !strings.Contains(msg, "unavailable after 3 attempts") || !strings.Contains(msg, "schema id 1") {
		t.Fatalf("dead letter message %q", msg)
	}
	pollFor(t, 10*time.Second, "the record counted as dropped", func() bool {
		return testutil.ToFloat64(m.RecordsDropped.WithLabelValues("KSTREAM-SOURCE-0000000000", metrics.DropDeserialization)) == 1
	})
	if st := ra.a.State(); st != StateRunning {
		t.Fatalf("state %s, want RUNNING", st)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPurchasesExampleRuns starts scripts/purchases.toml as `make run EXAMPLE=purchases` does,
// on free ports: its demo feeder writes Avro purchases through the embedded registry, and the
// spending of a customer shows in the store.
func TestPurchasesExampleRuns(t *testing.T) {
	text := readFile(t, "../scripts/purchases.toml")
	dir := t.TempDir()
	text = strings.NewReplacer(`"127.0.0.1:9464"`, `"127.0.0.1:0"`, `"127.0.0.1:9092"`, `"127.0.0.1:0"`, `"127.0.0.1:8081"`, `"127.0.0.1:0"`,
		`"../.stoatflow-state"`, `"state"`).Replace(text)
	if err := os.WriteFile(filepath.Join(dir, "purchases.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"purchases.lua", "purchase.avsc", "customer-spending.avsc"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(readFile(t, filepath.Join("../scripts", f))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(filepath.Join(dir, "purchases.toml"))
	if err != nil {
		t.Fatal(err)
	}
	ra := startAgent(t, cfg)
	defer ra.stop(t)
	addr, _ := ra.a.HTTPAddr(t.Context())
	var body string
	pollFor(t, 20*time.Second, "ann's spending in the store", func() bool {
		resp, err := http.Get("http://" + addr + "/v1/stores/customer-spending/keys/ann")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK
	})
	if !strings.Contains(body, `"customer":"ann"`) || !strings.Contains(body, `"lastOrderId":900719925474`) {
		t.Fatalf("the store answered %s", body)
	}
}

// TestUndecodedAvroThroughLua runs a stateless Avro pipeline, whose source hands its records
// on undecoded for the Lua callbacks to build their tables from the bytes: the output is
// what hamba/avro reads back (a long beyond 2^53 exact), and a record whose bytes the schema
// does not read is still a deserialization error naming its topic-partition@offset.
func TestUndecodedAvroThroughLua(t *testing.T) {
	const lineAvsc = `{"type": "record", "name": "Line", "fields": [{"name": "word", "type": "string"},
  {"name": "seq", "type": "long"}, {"name": "line", "type": "string"}, {"name": "tags", "type": {"type": "array", "items": "string"}}]}`
	brokers := testBroker(t, 1, "in", "out")
	cfg := testConfig(t, brokers, `local s = require("stoat")
local b = s.builder()
b:stream("in", { valueSerde = "avro" })
  :filter(function(word) return #word > 1 end)
  :mapValues(function(v) v.line = v.line:upper() return v end)
  :to("out", { valueSerde = s.avro({ schema = "line.avsc" }) })
return b`, `schema.registry.url = "embedded"`)
	if err := os.WriteFile(filepath.Join(cfg.Dir, "line.avsc"), []byte(lineAvsc), 0o644); err != nil {
		t.Fatal(err)
	}
	ra := startAgent(t, cfg)
	defer ra.stop(t)
	cl, err := sr.NewClient(sr.URLs(ra.a.registryURL))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := cl.CreateSchema(t.Context(), "in-value", sr.Schema{Schema: lineAvsc, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	schema := avro.MustParse(lineAvsc)
	payload, err := avro.Marshal(schema, map[string]any{"word": "stoat", "seq": int64(1)<<53 + 1, "line": "a stoat", "tags": []any{}})
	if err != nil {
		t.Fatal(err)
	}
	produceRaw(t, brokers, "in", "stoat", wire(ss.ID, payload))
	out := readAll(t, brokers, "out", 1)[0].Value
	var got map[string]any
	if err := avro.Unmarshal(schema, out[5:], &got); err != nil {
		t.Fatal(err)
	}
	if got["word"] != "stoat" || got["seq"] != int64(1)<<53+1 || got["line"] != "A STOAT" || len(got["tags"].([]any)) != 0 {
		t.Fatalf("hamba/avro read %v", got)
	}

	produceRaw(t, brokers, "in", "stoat", wire(ss.ID, payload[:len(payload)-3]))
	select {
	case err := <-ra.done:
		if err == nil || !strings.Contains(err.Error(), "in-0@1") || !strings.Contains(err.Error(), "the Avro data ends early") {
			t.Fatalf("the agent stopped with %v", err)
		}
		ra.done <- err
	case <-time.After(30 * time.Second):
		t.Fatal("a record the schema does not read did not stop the agent (deserialization.exception.handler is LogAndFail)")
	}
}

// TestSlowRegistryIsBoundedBelowTheTransactionTimeout: a registry that never answers held
// processing past transaction.timeout.ms while /readyz said RUNNING, and the producer was
// fenced. A call is now bounded by half the transaction timeout: the record fails (here
// LogAndContinue skips it), the epoch commits, and while the call waits /readyz and
// stoatflow_schema_registry_call_start_time_seconds show it.
func TestSlowRegistryIsBoundedBelowTheTransactionTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	brokers := testBroker(t, 1, "purchases", "customer-spending")
	extra := fmt.Sprintf(`schema.registry.url = %q
processing.guarantee = "exactly_once_v2"
transaction.timeout.ms = 4000
deserialization.exception.handler = "LogAndContinue"`, srv.URL)
	m := metrics.New()
	ra := startAgentWith(t, purchasesConfig(t, brokers, extra), m)
	defer ra.stop(t)
	addr, _ := ra.a.HTTPAddr(t.Context())
	produceRaw(t, brokers, "purchases", "o1", wire(1, []byte{2, 4}))
	pollFor(t, 20*time.Second, "/readyz showing the wait for the registry", func() bool {
		return strings.Contains(httpGet(t, "http://"+addr+"/readyz"), `"stalled":{"on":"schema registry","seconds":`)
	})
	if start := testutil.ToFloat64(m.RegistryCallStart); start < float64(time.Now().Add(-time.Minute).Unix()) {
		t.Fatalf("call start metric %v while a call waits", start)
	}
	pollFor(t, 20*time.Second, "the record skipped once the bounded call failed", func() bool {
		return testutil.ToFloat64(m.RecordsDropped.WithLabelValues("KSTREAM-SOURCE-0000000000", metrics.DropDeserialization)) == 1
	})
	pollFor(t, 10*time.Second, "the wait gone from /readyz and the metric", func() bool {
		return !strings.Contains(httpGet(t, "http://"+addr+"/readyz"), "stalled") && testutil.ToFloat64(m.RegistryCallStart) == 0
	})
	// The failure is remembered for a while: the next record of the id fails at once.
	produceRaw(t, brokers, "purchases", "o2", wire(1, []byte{2, 4}))
	pollFor(t, 10*time.Second, "the second record skipped", func() bool {
		return testutil.ToFloat64(m.RecordsDropped.WithLabelValues("KSTREAM-SOURCE-0000000000", metrics.DropDeserialization)) == 2
	})
	if st := ra.a.State(); st != StateRunning {
		t.Fatalf("state %s, want RUNNING", st)
	}
	if n := testutil.ToFloat64(m.Commits.WithLabelValues(metrics.ResultFailure)); n != 0 {
		t.Fatalf("%v failed commits: the wait outlasted the transaction", n)
	}
}
