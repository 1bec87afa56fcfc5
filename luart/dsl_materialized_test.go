package luart

import (
	"reflect"
	"strings"
	"testing"
)

// Materialized's retention (withRetention) makes a windowed aggregation's store keep windows
// that long: here a window 50 s behind stream time, which the default retention (size +
// grace, 10 s) has expired.
func TestMaterializedRetentionKeepsWindows(t *testing.T) {
	_, passed, failed, out := runLuaTests(t, map[string]string{
		"pipeline.lua": `local s = require("stoat")
local b = s.builder()
local g = b:stream("in"):groupByKey()
g:windowedBy(s.TimeWindows.ofSizeWithNoGrace("10s")):count({materialized = {name = "kept", retention = "1h"}})
g:windowedBy(s.TimeWindows.ofSizeWithNoGrace("10s")):count({materialized = {name = "default"}})
g:windowedBy(s.SessionWindows.ofInactivityGapWithNoGrace("10s")):count({materialized = {name = "sessions", retention = 3600000}})
return b
`,
		"pipeline_test.lua": `local t = require("stoat.test")
t.test("retention", function()
  local d = t.driver("pipeline.lua")
  local input = d:createInputTopic("in")
  input:pipeInput("k", "a", {timestamp = 0})
  input:pipeInput("k", "b", {timestamp = 60000})
  t.assertEquals(#d:getWindowStore("kept"):all(), 2)
  t.assertEquals(#d:getWindowStore("default"):all(), 1)
  t.assertEquals(#d:getSessionStore("sessions"):fetch("k"), 2)
end)
`,
	}, TestOptions{})
	if passed != 1 || failed != 0 {
		t.Fatalf("passed %d failed %d, output:\n%s", passed, failed, out)
	}
}

// A retention shorter than the windows need is refused with Kafka's rule (Kafka's
// WindowStoreMaterializer, SlidingWindowStoreMaterializer, SessionStoreMaterializer), and
// a key-value aggregation takes no retention.
func TestMaterializedRetentionRefusals(t *testing.T) {
	for _, c := range []struct{ agg, want string }{
		{`windowedBy(s.TimeWindows.ofSizeAndGrace("10s", "1s")):count({materialized = {retention = "5s"}})`,
			"the retention period of the window store KSTREAM-AGGREGATE-STATE-STORE-0000000002 must be no smaller than its window size plus the grace period: size=[10000], grace=[1000], retention=[5000]"},
		{`windowedBy(s.SlidingWindows.ofTimeDifferenceAndGrace("10s", "1s")):count({materialized = {name = "w", retention = "15s"}})`,
			"the retention period of the window store w must be no smaller than 2 * time difference plus the grace period: time difference=[10000], grace=[1000], retention=[15000]"},
		{`windowedBy(s.SessionWindows.ofInactivityGapAndGrace("10s", "1s")):count({materialized = {name = "w", retention = "10s"}})`,
			"the retention period of the session store w must be no smaller than the session inactivity gap plus the grace period: gap=[10000], grace=[1000], retention=[10000]"},
		{`windowedBy(s.TimeWindows.ofSizeWithNoGrace("10s")):count({materialized = {retention = "soon"}})`,
			`materialized: retention: invalid duration "soon"`},
		{`cogroup(function(k, v, agg) return agg end):windowedBy(s.TimeWindows.ofSizeAndGrace("10s", "1s")):aggregate(function() return "" end, {materialized = {name = "w", retention = "10s"}})`,
			"the retention period of the window store w must be no smaller than its window size plus the grace period: size=[10000], grace=[1000], retention=[10000]"},
		{`cogroup(function(k, v, agg) return agg end):windowedBy(s.SessionWindows.ofInactivityGapWithNoGrace("10s")):aggregate(function() return "" end, function(k, a, b) return a end, {materialized = {name = "w", retention = "9s"}})`,
			"the retention period of the session store w must be no smaller than the session inactivity gap plus the grace period: gap=[10000], grace=[0], retention=[9000]"},
		{`count({materialized = {name = "x", retention = "1h"}})`,
			"materialized: retention applies to the stores of windowed and session aggregations only (Materialized.withRetention)"},
	} {
		msg := loadError(t, prelude+`b:stream("in"):groupByKey():`+c.agg+"\nreturn b")
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.agg, msg, c.want)
		}
	}
}

// materialized = {logging = {settings}} is withLoggingEnabled(Map): the store's changelog
// topic gets those settings, for key-value, window and session stores alike, cogrouped too.
func TestMaterializedLoggingTopicConfig(t *testing.T) {
	_, b, err := load(t, prelude+`local cfg = {["min.insync.replicas"] = 2, ["cleanup.policy"] = "compact,delete"}
local g = b:stream("in"):groupByKey()
g:count({materialized = {name = "counts", logging = cfg}})
g:windowedBy(s.TimeWindows.ofSizeWithNoGrace("10s")):count({materialized = {name = "windows", logging = cfg}})
g:windowedBy(s.SessionWindows.ofInactivityGapWithNoGrace("10s")):count({materialized = {name = "sessions", logging = cfg}})
g:windowedBy(s.SlidingWindows.ofTimeDifferenceWithNoGrace("10s")):count({materialized = {name = "sliding", logging = cfg}})
g:cogroup(function(k, v, agg) return agg end):windowedBy(s.TimeWindows.ofSizeWithNoGrace("10s")):aggregate(function() return "" end, {materialized = {name = "cogrouped", retention = "1h", logging = cfg}})
b:table("t", {materialized = {name = "table", logging = false}})
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"min.insync.replicas": "2", "cleanup.policy": "compact,delete"}
	seen := 0
	for _, spec := range b.Stores() {
		switch spec.Name {
		case "counts", "windows", "sessions", "sliding", "cogrouped":
			seen++
			if !spec.Logged || !reflect.DeepEqual(spec.TopicConfig, want) {
				t.Errorf("store %s logged %v with %v, want %v", spec.Name, spec.Logged, spec.TopicConfig, want)
			}
			if spec.Name == "cogrouped" && spec.Retention != 3_600_000 {
				t.Errorf("store cogrouped keeps %d ms, want its materialized retention 3600000", spec.Retention)
			}
		case "table":
			seen++
			if spec.Logged || spec.TopicConfig != nil {
				t.Errorf("store table logged %v with %v", spec.Logged, spec.TopicConfig)
			}
		}
	}
	if seen != 6 {
		t.Fatalf("saw %d of the 6 stores in %v", seen, b.Stores())
	}
	msg := loadError(t, prelude+`b:stream("in"):groupByKey():count({materialized = {logging = "yes"}})
return b`)
	if !strings.Contains(msg, "materialized: logging must be true, false or a table of changelog topic settings, not a string") {
		t.Fatalf("error: %s", msg)
	}
}
