package agent

import "sync"

// commands is a worker's queue of what the loop gave it to run, in order. It never blocks
// the loop: the loop bounds what it gives the workers by records (loop.queued), not per
// worker, so that a worker busy with its backlog does not keep the loop from feeding the
// others (a per-worker bound would: the consumer hands out every partition's batches in one
// stream, and the loop would wait for the busy worker with the next batch in hand).
type commands struct {
	mu     sync.Mutex
	fns    []func()
	closed bool
	// ready receives when fns holds something, or the queue closed.
	ready chan struct{}
}

func newCommands() commands { return commands{ready: make(chan struct{}, 1)} }

// push queues fn.
func (c *commands) push(fn func()) {
	c.mu.Lock()
	c.fns = append(c.fns, fn)
	c.mu.Unlock()
	c.signal()
}

func (c *commands) signal() {
	select {
	case c.ready <- struct{}{}:
	default:
	}
}

// next takes the oldest command (nil when none is queued) and says whether to come back
// (more are queued, or the queue closed); ok is false once the queue is closed and empty.
func (c *commands) next() (fn func(), more, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.fns) == 0 {
		return nil, false, !c.closed
	}
	fn = c.fns[0]
	c.fns[0] = nil
	c.fns = c.fns[1:]
	// A closed queue comes back once more, to end the worker.
	return fn, len(c.fns) > 0 || c.closed, true
}

// len is how many commands are queued.
func (c *commands) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.fns)
}

// close lets the worker end once it has run what is queued.
func (c *commands) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.signal()
}
