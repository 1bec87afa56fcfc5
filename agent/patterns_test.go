package agent

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// A pattern source reads the matching topics there are at the start and, after the next
// metadata refresh, a matching topic created while the agent runs.
func TestPatternSourcePicksUpANewTopic(t *testing.T) {
	patternSourcePicksUpANewTopic(t, onKfake(t, 1, "other", "out"))
}

// patternSourcePicksUpANewTopic's pattern matches the topics named <in>-a and <in>-b, in
// a name of the test's own (on kfake "in").
func patternSourcePicksUpANewTopic(t *testing.T, b *brokerUnderTest) {
	brokers, other, out, in := b.brokers, b.topic(t, "other"), b.topic(t, "out"), b.name(t, "in")
	inA, inB := in+"-a", in+"-b"
	b.create(t, inA, 1, nil)
	sendKV(t, brokers, inA, 0, "k", "a1")
	sendKV(t, brokers, other, 0, "k", "not-matched")
	script := fmt.Sprintf(`local s = require("stoat")
local b = s.builder()
b:stream({pattern = %q}):mapValues(function(v, r) return r.topic .. ":" .. v end):to("out")
return b`, regexp.QuoteMeta(in)+"-.*")
	ra := startAgent(t, b.config(t, script, `metadata.max.age.ms = 100`))
	defer func() { _ = ra.stop(t) }()
	readUntil(t, brokers, out, hasValue(inA+":a1"))
	if logs := ra.waitLog(t, "StoatFlow is running"); !strings.Contains(logs, "sources=["+inA+"]") {
		t.Errorf("the running line does not name the topic the pattern matched:\n%s", logs)
	}

	b.create(t, inB, 1, nil)
	sendKV(t, brokers, inB, 0, "k", "b1")
	got := readUntil(t, brokers, out, hasValue(inB+":b1"))
	if hasValue(other + ":not-matched")(got) {
		t.Fatal("a topic the pattern does not match was read")
	}
}
