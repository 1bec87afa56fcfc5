package agent

import (
	"strings"
	"testing"
)

// A changelog topic longer than Kafka's 249 characters is refused when the scripts load
// (validate and run): the embedded broker would create it, a real one refuses it.
func TestChangelogTopicLongerThanKafkaAllowsIsRefused(t *testing.T) {
	const script = `local s = require("stoat")
local b = s.builder()
b:stream("in"):groupByKey():count({materialized = "counts"}):toStream():to("out", {valueSerde = "long"})
return b`
	cfg := testConfig(t, []string{"127.0.0.1:1"}, script, "")
	// "<id>-counts-changelog" is 249 characters exactly.
	cfg.ApplicationID = strings.Repeat("a", 249-len("-counts-changelog"))
	if _, err := Validate(cfg); err != nil {
		t.Fatalf("a 249-character changelog topic: %v", err)
	}
	cfg.ApplicationID += "a"
	_, err := Validate(cfg)
	if err == nil || !strings.Contains(err.Error(), "streams.application.id") || !strings.Contains(err.Error(), `store "counts"`) || !strings.Contains(err.Error(), "250 characters") {
		t.Fatalf("error %v, want one naming streams.application.id, the store and the length", err)
	}
}
