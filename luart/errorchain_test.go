package luart

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

var errRefused = errors.New("refused by the collector")

// refusingCollector fails every send with errRefused, as a producer that is fenced or a
// record too large does.
type refusingCollector struct{}

func (refusingCollector) Send(topic string, _ int32, _, _ []byte, _ pipeline.Headers, _ int64, _ *pipeline.SourceRecord) error {
	return fmt.Errorf("send to %s: %w", topic, errRefused)
}

func (refusingCollector) PartitionsFor(string) (int32, error) { return 1, nil }

// A Go error raised into a script (here a send refused below ctx:forward, through one and
// through two Lua nodes) stays in the chain of the error the call ends with, so the agent
// tells a failed send from a failing script; one the script caught and replaced does not.
func TestRaisedGoErrorsStayInTheChain(t *testing.T) {
	cases := []struct {
		name, process string
		inChain       bool
	}{
		{"forward", `b:stream("in"):process(function()
  return {process = function(ctx, k, v) ctx:forward(k, v) end}
end):to("out")`, true},
		{"forward through two Lua nodes", `b:stream("in"):process(function()
  return {process = function(ctx, k, v) ctx:forward(k, v) end}
end):process(function()
  return {process = function(ctx, k, v) ctx:forward(k, v .. "!") end}
end):to("out")`, true},
		{"caught and replaced", `b:stream("in"):process(function()
  return {process = function(ctx, k, v)
    local ok = pcall(function() ctx:forward(k, v) end)
    if not ok then error("the script's own error") end
  end}
end):to("out")`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, b, err := load(t, prelude+tc.process+"\nreturn b", nil)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			topo, err := b.Build(pipeline.TopologyOptions{Collector: refusingCollector{}, SourcePartitions: map[string]int32{"in": 1},
				Stores: pipeline.NewMemoryStores(), ApplicationID: "app"})
			if err != nil {
				t.Fatal(err)
			}
			err = topo.Process(&pipeline.SourceRecord{Topic: "in", Key: []byte("k"), Value: []byte("v"), Timestamp: 1})
			if err == nil {
				t.Fatal("the refused send did not fail the record")
			}
			if got := errors.Is(err, errRefused); got != tc.inChain {
				t.Errorf("errors.Is(err, the collector's error) = %v, want %v: %v", got, tc.inChain, err)
			}
			var se *ScriptError
			if !errors.As(err, &se) || !strings.Contains(se.Message, "pipeline.lua:") {
				t.Errorf("the error is not a ScriptError naming the script's line: %v", err)
			}
		})
	}
}
