package agent

import (
	"encoding/binary"
	"testing"

	"github.com/IBM/sarama"
)

// With the record cache (statestore.cache.max.bytes, on by default) a key's updates within
// an epoch collapse into one output; the last value of every key is still exact.
func TestRecordCacheCollapsesUpdatesPerEpoch(t *testing.T) {
	recordCacheCollapsesUpdatesPerEpoch(t, onKfake(t, 1, "in", "out"))
}

func recordCacheCollapsesUpdatesPerEpoch(t *testing.T, b *brokerUnderTest) {
	script := `
local s = require("stoat")
local b = s.builder()
b:stream("in"):groupByKey():count({materialized = "c"}):toStream():to("out", {valueSerde = "long"})
return b
`
	cfg := b.config(t, script, "processing.guarantee = \"exactly_once_v2\"\ncommit.interval.ms = 1000\n")
	ra := startAgent(t, cfg)
	defer ra.stop(t)
	b.produceKeys(t, 300, 3, 0, "v")
	last := map[string]int64{}
	got := readUntil(t, b.brokers, b.topic(t, "out"), func(msgs []*sarama.ConsumerMessage) bool {
		for _, m := range msgs[len(msgs)-min(len(msgs), 1):] {
			last[string(m.Key)] = int64(binary.BigEndian.Uint64(m.Value))
		}
		return len(last) == 3 && last["k0"] == 100 && last["k1"] == 100 && last["k2"] == 100
	})
	if len(got) >= 300 {
		t.Fatalf("%d outputs for 300 updates: the cache collapsed nothing", len(got))
	}
	t.Logf("%d outputs for 300 updates of 3 keys", len(got))
}
