package luart

import "time"

// monoEpoch anchors monoNow. A Lua call is timed twice per record; time.Now reads the wall
// clock as well as the monotonic one, and time.Since of a Time that holds a monotonic reading
// reads the monotonic clock alone.
var monoEpoch = time.Now()

// monoNow is the monotonic time since monoEpoch.
func monoNow() time.Duration { return time.Since(monoEpoch) }

// nodeTimes charges the time of each Lua call to the topology node that made it. A call
// that runs other nodes' callbacks (a processor's ctx:forward) is charged only its own
// time, so the nodes' times add up to the total.
type nodeTimes struct {
	current func() string // the running node, "" outside any (pipeline.Topology.CurrentNode)
	spent   map[string]time.Duration
	// first holds the times of the first nodes charged, added to spent when it is read: a
	// topology's few Lua nodes are found there faster than by a map write per call.
	first  []nodeTime
	nested time.Duration // time of the calls nested in the running one, so far
}

type nodeTime struct {
	node  string
	spent time.Duration
}

// maxListedNodes bounds first; the nodes beyond it are charged in spent at once.
const maxListedNodes = 16

// enter starts a call; it returns what leave needs to restore.
func (n *nodeTimes) enter() time.Duration {
	outer := n.nested
	n.nested = 0
	return outer
}

// leave ends a call that took took, charging its own part to the running node.
func (n *nodeTimes) leave(outer, took time.Duration) {
	if n.current != nil {
		n.charge(n.current(), took-n.nested)
	}
	n.nested = outer + took
}

func (n *nodeTimes) charge(node string, d time.Duration) {
	for i := range n.first {
		if n.first[i].node == node {
			n.first[i].spent += d
			return
		}
	}
	if len(n.first) < maxListedNodes {
		n.first = append(n.first, nodeTime{node, d})
		return
	}
	n.spent[node] += d
}

// flush moves the listed times into spent.
func (n *nodeTimes) flush() {
	for i := range n.first {
		n.spent[n.first[i].node] += n.first[i].spent
		n.first[i].spent = 0
	}
}

// ChargeNodes makes the runtime keep the Lua time of each node, asking current which node
// runs; the agent passes the running topology's CurrentNode, and again after a rebuild.
func (rt *Runtime) ChargeNodes(current func() string) {
	if rt.nodes.spent == nil {
		rt.nodes.spent = map[string]time.Duration{}
	}
	// A rebuilt topology may name other nodes.
	rt.nodes.flush()
	rt.nodes.first = rt.nodes.first[:0]
	rt.nodes.current = current
}

// LuaTimeByNode is the Lua time spent so far by each node's callbacks, since ChargeNodes;
// calls outside any node (script loading) are under "". The map is the runtime's own: read
// it on the goroutine that runs the topology; it holds the times up to this call.
func (rt *Runtime) LuaTimeByNode() map[string]time.Duration {
	rt.nodes.flush()
	return rt.nodes.spent
}
