package luart

import (
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
)

func windowedKey(k string, times ...int64) []byte {
	b := []byte(k)
	for _, t := range times {
		b = binary.BigEndian.AppendUint64(b, uint64(t))
	}
	return b
}

// Kafka Streams' WindowedSerdes as sources and sinks: a time-windowed key [key][start]
// read with its window size, a session key [key][end][start], both reaching Lua as
// {key=, window={start=, end=}}, and written back in the same layouts.
func TestWindowedSerdesForSourcesAndSinks(t *testing.T) {
	d := storeDriver(t, prelude+`
local show = function(k, v) return k.key .. "@" .. k.window.start .. "/" .. k.window["end"], v end
b:stream("tw", {keySerde = s.WindowedSerdes.timeWindowedSerdeFrom("string", "10ms")}):map(show):to("tw-out")
b:stream("sw", {keySerde = "session-windowed-string"}):map(show):to("sw-out")
b:stream("copy", {keySerde = s.WindowedSerdes.timeWindowedSerdeFrom("string", 10)})
  :to("copy-out", {keySerde = s.WindowedSerdes.sessionWindowedSerdeFrom("string")})
return b`)
	for _, in := range []struct {
		topic string
		key   []byte
	}{{"tw", windowedKey("k", 5)}, {"sw", windowedKey("k", 9, 3)}, {"copy", windowedKey("k", 20)}} {
		if err := d.Pipe(in.topic, in.key, []byte("v"), 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	expectLines(t, readSessions(d, "tw-out", asText), []string{"k@5/15 v @1"})
	expectLines(t, readSessions(d, "sw-out", asText), []string{"k@3/9 v @1"})
	r, ok := d.ReadOutput("copy-out")
	if !ok || string(r.Key) != string(windowedKey("k", 30, 20)) {
		t.Fatalf("session-windowed copy of a time window [20, 30): %q", r.Key)
	}
}

// "windowed-<inner>" takes its window size from window.size.ms; without one, reading fails
// naming the serde, as TimeWindowedDeserializer does. Writing needs no size.
func TestWindowedSerdeNameNeedsAWindowSize(t *testing.T) {
	script := prelude + `b:stream("in", {keySerde = "windowed-string"}):map(function(k, v) return k.key .. "/" .. k.window["end"], v end):to("out")
b:stream("agg"):groupByKey():windowedBy(s.TimeWindows.ofSizeWithNoGrace(5)):count()
  :toStream():to("counts", {keySerde = "windowed-string", valueSerde = "long"})
return b`
	for _, size := range []time.Duration{0, 7 * time.Millisecond} {
		_, b, err := loadWith(t, Options{CallTimeout: time.Second, WindowSize: size.Milliseconds()}, script, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, err := pipeline.NewDriver(b, pipeline.DriverOptions{Stores: pipeline.NewMemoryStores(), ApplicationID: "app"})
		if err != nil {
			t.Fatal(err)
		}
		err = d.Pipe("in", windowedKey("k", 4), []byte("v"), 1, nil)
		if size == 0 {
			if err == nil || !strings.Contains(err.Error(), "serde windowed-string: the window size needs to be set") {
				t.Fatalf("no window size: %v", err)
			}
		} else {
			if err != nil {
				t.Fatal(err)
			}
			expectLines(t, readSessions(d, "out", asText), []string{"k/11 v @1"})
		}
		if err := d.Pipe("agg", []byte("a"), []byte("x"), 12, nil); err != nil {
			t.Fatal(err)
		}
		r, ok := d.ReadOutput("counts")
		if !ok || string(r.Key) != string(windowedKey("a", 10)) {
			t.Fatalf("window size %v: windowed key written %q", size, r.Key)
		}
	}
	for _, c := range []struct{ script, want string }{
		{`s.WindowedSerdes.timeWindowedSerdeFrom("string")`, "needs the window size"},
		{`s.WindowedSerdes.sessionWindowedSerdeFrom()`, "needs the inner serde"},
		{`b:stream("x", {keySerde = "windowed-nope"})`, `needs a built-in inner serde`},
	} {
		if _, _, err := load(t, prelude+c.script+"\nreturn b", nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.script, err)
		}
	}
}

// A stoat test reads a windowed output topic with s.WindowedSerdes, as a Java test reads
// it with WindowedSerdes.timeWindowedSerdeFrom.
func TestWindowedSerdesInStoatTests(t *testing.T) {
	_, passed, failed, out := runLuaTests(t, map[string]string{"pipeline.lua": `local s = require("stoat")
local b = s.builder()
b:stream("in"):groupByKey():windowedBy(s.TimeWindows.ofSizeWithNoGrace(10)):count():toStream():to("out", {valueSerde = "long"})
return b
`, "pipeline_test.lua": `local t = require("stoat.test")
local s = require("stoat")
t.test("windowed output", function()
  local d = t.driver("pipeline.lua")
  d:createInputTopic("in"):pipeInput("a", "x", {timestamp = 12})
  local r = d:createOutputTopic("out", {keySerde = s.WindowedSerdes.timeWindowedSerdeFrom("string", 10), valueSerde = "long"}):readKeyValue()
  t.assertEquals(r.key, {key = "a", window = {start = 10, ["end"] = 20}})
  t.assertEquals(r.value, 1)
end)
`}, TestOptions{})
	if failed != 0 || passed == 0 {
		t.Fatalf("passed %d failed %d, output:\n%s", passed, failed, out)
	}
}
