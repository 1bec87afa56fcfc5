package luart

import (
	"context"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// budget stops a Lua call that runs longer than its limit. A per-call context.WithTimeout
// would allocate a timer per record; instead one watchdog goroutine watches a call sequence
// number and cancels the state's context when the same call has been running too long.
type budget struct {
	limit time.Duration
	L     *lua.LState

	mu     sync.Mutex
	seq    uint64 // incremented at every call start
	active bool
	fired  bool
	cancel context.CancelFunc

	done chan struct{}
}

func newBudget(L *lua.LState, limit time.Duration) *budget {
	b := &budget{limit: limit, L: L, done: make(chan struct{})}
	b.resetContext()
	go b.watch()
	return b
}

func (b *budget) resetContext() {
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	b.L.SetContext(ctx)
}

// begin marks the start of a call.
func (b *budget) begin() {
	b.mu.Lock()
	b.seq++
	b.active = true
	b.mu.Unlock()
}

// end marks the end of a call and reports whether the watchdog stopped it.
func (b *budget) end() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.active = false
	if !b.fired {
		return false
	}
	b.fired = false
	b.resetContext()
	return true
}

func (b *budget) watch() {
	tick := min(max(b.limit/8, time.Millisecond), 100*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	var seenSeq uint64
	var seenAt time.Time
	for {
		select {
		case <-b.done:
			return
		case now := <-t.C:
			b.mu.Lock()
			switch {
			case !b.active || b.seq != seenSeq:
				seenSeq, seenAt = b.seq, now
			case !b.fired && now.Sub(seenAt) >= b.limit:
				b.fired = true
				b.cancel()
			}
			b.mu.Unlock()
		}
	}
}

func (b *budget) close() {
	close(b.done)
	b.cancel()
}
