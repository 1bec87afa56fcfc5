package pipeline

import "strings"

// linkOrders gives, for every node of one sub-topology, its successors and predecessors in
// the order Kafka Streams' describe() prints them. InternalTopologyBuilder#describeSubtopology
// links the nodes one at a time, walking them in the iteration order of a HashMap keyed by
// name, and keeps each node's successors and predecessors in a TreeSet ordered by sub-tree
// size (descending), then name. A size grows as links are made, so an element's place is
// decided by the sizes at the time it is inserted and can differ from the order of the
// final sizes: two equal predecessors of a merge node are printed in the order they are
// linked, whatever their names.
func linkOrders(members []*Node) (successors, predecessors map[*Node][]*Node) {
	in := make(map[*Node]bool, len(members))
	for _, n := range members {
		in[n] = true
	}
	size := make(map[*Node]int, len(members))
	succ := make(map[*Node]*nodeTree, len(members))
	pred := make(map[*Node]*nodeTree, len(members))
	for _, n := range members {
		size[n] = 1
		succ[n], pred[n] = &nodeTree{}, &nodeTree{}
	}
	less := func(a, b *Node) int {
		if a == b {
			return 0
		}
		if size[a] != size[b] {
			return size[b] - size[a]
		}
		return strings.Compare(a.Name, b.Name)
	}
	var grow func(n *Node, delta int)
	grow = func(n *Node, delta int) {
		size[n] += delta
		for _, p := range pred[n].items() {
			grow(p, delta)
		}
	}
	for _, n := range javaHashMapOrder(members) {
		for _, p := range n.Parents {
			if !in[p] {
				continue
			}
			pred[n].insert(p, less)
			succ[p].insert(n, less)
			grow(p, size[n])
		}
	}
	successors = make(map[*Node][]*Node, len(members))
	predecessors = make(map[*Node][]*Node, len(members))
	for _, n := range members {
		successors[n], predecessors[n] = succ[n].items(), pred[n].items()
	}
	return successors, predecessors
}

// javaHashMapOrder is the iteration order of a java.util.HashMap (or HashSet) holding the
// nodes' names, inserted in the given order: by bucket of the table's final capacity, then
// by insertion order within a bucket.
func javaHashMapOrder(nodes []*Node) []*Node {
	capacity := 16
	for len(nodes) > capacity*3/4 {
		capacity <<= 1
	}
	buckets := make([][]*Node, capacity)
	for _, n := range nodes {
		h := javaStringHash(n.Name)
		h ^= int32(uint32(h) >> 16)
		b := int(h) & (capacity - 1)
		buckets[b] = append(buckets[b], n)
	}
	out := make([]*Node, 0, len(nodes))
	for _, b := range buckets {
		out = append(out, b...)
	}
	return out
}

// nodeTree is a java.util.TreeSet of nodes: a red-black tree whose insertions compare with
// the comparator as it is at that moment, as TreeMap#put and #fixAfterInsertion do, so
// that the in-order walk is Java's even when the comparator has changed in between.
type nodeTree struct{ root *treeNode }

type treeNode struct {
	n                   *Node
	left, right, parent *treeNode
	black               bool
}

func (t *nodeTree) insert(n *Node, cmp func(a, b *Node) int) {
	if t.root == nil {
		t.root = &treeNode{n: n, black: true}
		return
	}
	x := t.root
	for {
		c := cmp(n, x.n)
		switch {
		case c == 0:
			return
		case c < 0 && x.left != nil:
			x = x.left
		case c > 0 && x.right != nil:
			x = x.right
		default:
			e := &treeNode{n: n, parent: x}
			if c < 0 {
				x.left = e
			} else {
				x.right = e
			}
			t.fixAfterInsertion(e)
			return
		}
	}
}

func isBlack(x *treeNode) bool { return x == nil || x.black }

func (t *nodeTree) fixAfterInsertion(x *treeNode) {
	for x != nil && x != t.root && !x.parent.black {
		p := x.parent
		g := p.parent
		if p == g.left {
			if u := g.right; !isBlack(u) {
				p.black, u.black, g.black = true, true, false
				x = g
				continue
			}
			if x == p.right {
				x = p
				t.rotateLeft(x)
				p = x.parent
			}
			p.black, g.black = true, false
			t.rotateRight(g)
		} else {
			if u := g.left; !isBlack(u) {
				p.black, u.black, g.black = true, true, false
				x = g
				continue
			}
			if x == p.left {
				x = p
				t.rotateRight(x)
				p = x.parent
			}
			p.black, g.black = true, false
			t.rotateLeft(g)
		}
	}
	t.root.black = true
}

func (t *nodeTree) rotateLeft(p *treeNode) {
	r := p.right
	p.right = r.left
	if r.left != nil {
		r.left.parent = p
	}
	t.replace(p, r)
	r.left, p.parent = p, r
}

func (t *nodeTree) rotateRight(p *treeNode) {
	l := p.left
	p.left = l.right
	if l.right != nil {
		l.right.parent = p
	}
	t.replace(p, l)
	l.right, p.parent = p, l
}

// replace puts c where p hangs from its parent.
func (t *nodeTree) replace(p, c *treeNode) {
	c.parent = p.parent
	switch {
	case p.parent == nil:
		t.root = c
	case p.parent.left == p:
		p.parent.left = c
	default:
		p.parent.right = c
	}
}

// items walks the tree in order.
func (t *nodeTree) items() []*Node {
	var out []*Node
	var walk func(x *treeNode)
	walk = func(x *treeNode) {
		if x == nil {
			return
		}
		walk(x.left)
		out = append(out, x.n)
		walk(x.right)
	}
	walk(t.root)
	return out
}
