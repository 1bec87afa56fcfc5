package agent

import "testing"

// A worker's commands come out in order, one at a time, and a closed queue ends only once
// what it holds has run.
func TestCommandsRunInOrderAndCloseAfterThem(t *testing.T) {
	c := newCommands()
	var ran []int
	for i := range 3 {
		c.push(func() { ran = append(ran, i) })
	}
	c.close()
	for {
		<-c.ready
		fn, more, ok := c.next()
		if !ok {
			break
		}
		if fn != nil {
			fn()
		}
		if more {
			c.signal()
		}
	}
	if len(ran) != 3 || ran[0] != 0 || ran[2] != 2 {
		t.Fatalf("ran %v, want [0 1 2]", ran)
	}
	if c.len() != 0 {
		t.Fatalf("%d commands left", c.len())
	}
}
