package agent

import (
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
)

// A pattern source reads the matching topics there are at the start and, after the next
// metadata refresh, a matching topic created while the agent runs.
func TestPatternSourcePicksUpANewTopic(t *testing.T) {
	brokers := testBroker(t, 1, "in-a", "other", "out")
	sendKV(t, brokers, "in-a", 0, "k", "a1")
	sendKV(t, brokers, "other", 0, "k", "not-matched")
	script := `local s = require("stoat")
local b = s.builder()
b:stream({pattern = "in-.*"}):mapValues(function(v, r) return r.topic .. ":" .. v end):to("out")
return b`
	ra := startAgent(t, testConfig(t, brokers, script, `metadata.max.age.ms = 100`))
	defer func() { _ = ra.stop(t) }()
	readUntil(t, brokers, "out", hasValue("in-a:a1"))
	if logs := ra.waitLog(t, "StoatFlow is running"); !strings.Contains(logs, "sources=[in-a]") {
		t.Errorf("the running line does not name the topic the pattern matched:\n%s", logs)
	}

	if err := kafkaio.EnsureTopics(brokers, saramaTestConfig(), map[string]kafkaio.TopicSpec{"in-b": {Partitions: 1, ReplicationFactor: -1}}); err != nil {
		t.Fatal(err)
	}
	sendKV(t, brokers, "in-b", 0, "k", "b1")
	got := readUntil(t, brokers, "out", hasValue("in-b:b1"))
	if hasValue("other:not-matched")(got) {
		t.Fatal("a topic the pattern does not match was read")
	}
}
