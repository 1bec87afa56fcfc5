package luart

import (
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
