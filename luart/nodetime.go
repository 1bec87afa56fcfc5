package luart

import "time"

// nodeTimes charges the time of each Lua call to the topology node that made it. A call
// that runs other nodes' callbacks (a processor's ctx:forward) is charged only its own
// time, so the nodes' times add up to the total.
type nodeTimes struct {
	current func() string // the running node, "" outside any (pipeline.Topology.CurrentNode)
	spent   map[string]time.Duration
	nested  time.Duration // time of the calls nested in the running one, so far
}

// enter starts a call; it returns what leave needs to restore.
func (n *nodeTimes) enter() time.Duration {
	outer := n.nested
	n.nested = 0
	return outer
}

// leave ends a call that took took, charging its own part to the running node.
func (n *nodeTimes) leave(outer, took time.Duration) {
	if n.current != nil {
		n.spent[n.current()] += took - n.nested
	}
	n.nested = outer + took
}

// ChargeNodes makes the runtime keep the Lua time of each node, asking current which node
// runs; the agent passes the running topology's CurrentNode, and again after a rebuild.
func (rt *Runtime) ChargeNodes(current func() string) {
	rt.nodes.current = current
	if rt.nodes.spent == nil {
		rt.nodes.spent = map[string]time.Duration{}
	}
}

// LuaTimeByNode is the Lua time spent so far by each node's callbacks, since ChargeNodes;
// calls outside any node (script loading) are under "". The map is the runtime's own: read
// it on the goroutine that runs the topology.
func (rt *Runtime) LuaTimeByNode() map[string]time.Duration { return rt.nodes.spent }
