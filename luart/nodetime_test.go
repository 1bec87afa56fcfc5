package luart

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Each node is charged the time of its own callbacks: a processor that forwards into
// another Lua node is not charged the other's time, and the nodes' times add up to the
// runtime's total.
func TestLuaTimeChargedToEachNode(t *testing.T) {
	rt, b, err := load(t, prelude+`
local function spin(n) local x = 0 for i = 1, n do x = x + i end return x end
b:stream("in"):process(function()
  return { process = function(ctx, k, v) spin(300) ctx:forward(k, v) end }
end, {name = "light"}):mapValues(function(v) spin(50000) return v end, {name = "heavy"}):to("out")
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := pipeline.NewDriver(b, pipeline.DriverOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rt.ChargeNodes(d.Topology().CurrentNode)
	before := rt.LuaTime()
	pipe(t, d, "in", "k", "v")
	spent := rt.LuaTimeByNode()
	light, heavy := spent["light"], spent["heavy"]
	if light <= 0 || heavy <= 0 || light >= heavy {
		t.Fatalf("light %v, heavy %v: each node its own time, the forwarding one without its child's", light, heavy)
	}
	var sum time.Duration
	for _, d := range spent {
		sum += d
	}
	if total := rt.LuaTime() - before; sum != total {
		t.Fatalf("the nodes' times add up to %v, the total is %v (%v)", sum, total, spent)
	}
}

// TestNodeTimesAddUpOverManyNodesAndReads: times charged to more nodes than are listed, read
// between calls and across a rebuild naming other nodes, are each node's sum.
func TestNodeTimesAddUpOverManyNodesAndReads(t *testing.T) {
	rt, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	running := ""
	rt.ChargeNodes(func() string { return running })
	want := map[string]time.Duration{}
	charge := func(node string, d time.Duration) {
		running = node
		rt.nodes.leave(rt.nodes.enter(), d)
		want[node] += d
	}
	for round := range 3 {
		for i := range 2 * maxListedNodes {
			charge(fmt.Sprint("node-", i%(maxListedNodes+3)), time.Duration(i+round))
		}
		if got := rt.LuaTimeByNode(); !maps.Equal(got, want) {
			t.Fatalf("round %d: %v, want %v", round, got, want)
		}
	}
	charge("node-2", 3)
	rt.ChargeNodes(func() string { return running })
	charge("rebuilt", 5)
	charge("node-1", 7)
	if got := rt.LuaTimeByNode(); !maps.Equal(got, want) {
		t.Fatalf("after a rebuild: %v, want %v", got, want)
	}
}
