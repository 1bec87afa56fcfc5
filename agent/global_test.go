package agent

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/metrics"
)

const globalJoinScript = `
local s = require("stoat")
local b = s.builder()
local products = b:globalTable("products")
b:stream("orders"):join(products, function(k, v) return v end,
  function(sk, mk, sv, tv) return sk .. ":" .. mk .. "=" .. tv end):to("out")
return b
`

// globalProc is the global table's KTABLE-SOURCE node: store 0, source 1, processor 2.
const globalProc = "KTABLE-SOURCE-0000000002"

func sendKV(t *testing.T, brokers []string, topic string, partition int32, kvs ...string) {
	t.Helper()
	p, err := sarama.NewSyncProducer(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := 0; i < len(kvs); i += 2 {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: partition,
			Key: sarama.StringEncoder(kvs[i]), Value: sarama.StringEncoder(kvs[i+1]), Timestamp: time.UnixMilli(producedAt)}); err != nil {
			t.Fatal(err)
		}
	}
}

func hasValue(want string) func([]*sarama.ConsumerMessage) bool {
	return func(got []*sarama.ConsumerMessage) bool {
		for _, m := range got {
			if string(m.Value) == want {
				return true
			}
		}
		return false
	}
}

// The global table is read in full (every partition) before the first stream record is
// joined, follows its topic while running, and a restart reads only what is new.
func TestGlobalTableBootstrapUpdatesAndRestart(t *testing.T) {
	globalTableBootstrapUpdatesAndRestart(t, onKfake(t, 2, "orders", "products", "out"))
}

func globalTableBootstrapUpdatesAndRestart(t *testing.T, b *brokerUnderTest) {
	brokers, orders, products, out := b.brokers, b.topic(t, "orders"), b.topic(t, "products"), b.topic(t, "out")
	sendKV(t, brokers, products, 0, "p1", "A")
	sendKV(t, brokers, products, 1, "p2", "B")
	cfg := b.config(t, globalJoinScript, "")

	m := metrics.New()
	ra := startAgentWith(t, cfg, m)
	if got := testutil.ToFloat64(m.RecordsProcessed.WithLabelValues(globalProc)); got != 2 {
		t.Fatalf("bootstrap applied %v global records, want 2 (before RUNNING)", got)
	}
	sendKV(t, brokers, orders, 0, "o1", "p1")
	sendKV(t, brokers, orders, 1, "o2", "p2")
	readUntil(t, brokers, out, func(got []*sarama.ConsumerMessage) bool {
		return hasValue("o1:p1=A")(got) && hasValue("o2:p2=B")(got)
	})

	// A global update reaches the running application: keep sending orders until one
	// sees it.
	sendKV(t, brokers, products, 0, "p1", "C")
	deadline := time.Now().Add(30 * time.Second)
	for sent := 0; !hasValue("o3:p1=C")(readAll(t, brokers, out, 2+sent)); sent++ {
		if time.Now().After(deadline) {
			t.Fatal("the global update never reached the join")
		}
		sendKV(t, brokers, orders, 0, "o3", "p1")
	}
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}

	sendKV(t, brokers, products, 1, "p2", "D")
	m = metrics.New()
	ra = startAgentWith(t, cfg, m)
	defer func() { _ = ra.stop(t) }()
	if got := testutil.ToFloat64(m.RecordsProcessed.WithLabelValues(globalProc)); got != 1 {
		t.Fatalf("restart applied %v global records, want only the 1 new one", got)
	}
	sendKV(t, brokers, orders, 1, "o4", "p2")
	readUntil(t, brokers, out, hasValue("o4:p2=D"))
}

// A global table's store is one partition holding every partition of its topic, and the
// query endpoints say so: /v1/stores lists one partition, IQv2 answers for partition 0
// only, and queryMetadataForKey answers partition -1 as Kafka Streams does for a global
// store (every instance holds all of it).
func TestGlobalStoreIsOnePartitionInQueries(t *testing.T) {
	brokers := testBroker(t, 3, "orders", "products", "out")
	sendKV(t, brokers, "products", 2, "p1", "A")
	ra := startAgent(t, testConfig(t, brokers, globalJoinScript, ""))
	defer func() { _ = ra.stop(t) }()
	const store = "products-STATE-STORE-0000000000"
	_, list := serveQuery(t, ra.a, "GET", "/v1/stores", "")
	if got := fmt.Sprint(list["list"]); got != "[map[approximateNumUncommittedBytes:0 keySerde:string name:"+store+" partitions:1 type:timestampedKeyValue valueSerde:string]]" {
		t.Fatalf("GET /v1/stores: %s", got)
	}
	code, res := serveQuery(t, ra.a, "POST", "/v2/query", `{"store":"`+store+`","query":{"type":"KeyQuery","key":"p1"}}`)
	parts, _ := res["partitionResults"].([]any)
	if code != 200 || len(parts) != 1 || fmt.Sprint(parts[0].(map[string]any)["result"]) != "A" {
		t.Fatalf("IQv2 KeyQuery: %d %v", code, res)
	}
	if code, got := serveQuery(t, ra.a, "GET", "/v1/stores/"+store+"/keys/p1", ""); code != 200 || got["value"] != "A" || fmt.Sprint(got["partition"]) != "0" {
		t.Fatalf("GET key: %d %v", code, got)
	}
	if code, got := serveQuery(t, ra.a, "GET", "/v1/metadata/"+store+"/p1", ""); code != 200 || fmt.Sprint(got["partition"]) != "-1" {
		t.Fatalf("metadata: %d %v", code, got)
	}
}
