package agent

import (
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// TestInvalidUTF8UnderTheStringSerde: bytes that are not UTF-8 under the string serde
// decode as Kafka's StringDeserializer decodes them (U+FFFD by the JDK's rule) and flow on;
// before, the record was a deserialization error that stopped the agent (LogAndFail, the
// default) after every restart.
func TestInvalidUTF8UnderTheStringSerde(t *testing.T) {
	brokers := testBroker(t, 1, "in", "out")
	cfg := testConfig(t, brokers, `local s = require("stoat")
local b = s.builder()
b:stream("in"):mapValues(function(v) return "<" .. v .. ">" end):to("out")
return b`, `processing.guarantee = "exactly_once_v2"`)
	ra := startAgent(t, cfg)
	defer ra.stop(t)
	p, err := sarama.NewSyncProducer(brokers, saramaTestConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, v := range []string{"v\xff\xfe", "\xed\xa0\x80!", "ok"} {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "in", Key: sarama.StringEncoder("k\xc0"), Value: sarama.StringEncoder(v)}); err != nil {
			t.Fatal(err)
		}
	}
	out := readCommitted(t, brokers, "out", 3)
	for i, want := range []string{"<v\uFFFD\uFFFD>", "<\uFFFD!>", "<ok>"} {
		if string(out[i].Value) != want || string(out[i].Key) != "k\uFFFD" {
			t.Errorf("output %d: %q = %q, want %q = %q", i, out[i].Key, out[i].Value, "k\uFFFD", want)
		}
	}
	pollFor(t, 10*time.Second, "the agent running", func() bool { return ra.a.State() == StateRunning })
}
