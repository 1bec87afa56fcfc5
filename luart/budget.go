package luart

import (
	"context"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// budget stops a Lua call that runs longer than its limit. A per-call context.WithTimeout
// would allocate a timer per record; instead one watchdog goroutine watches a sequence
// number, bumped at every change between running Lua and running Go, and cancels the
// state's context when Lua has been running without a change for too long.
//
// Only time spent in Lua counts: a Go function called from Lua that may wait (ctx:forward
// waiting for the producer, say) suspends the budget, and Lua callbacks it runs in turn
// are budgeted on their own.
type budget struct {
	limit time.Duration
	L     *lua.LState

	mu     sync.Mutex
	seq    uint64 // bumped at every transition
	frames []bool // innermost last: true while Lua runs, false while suspended in Go
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

func (b *budget) push(lua bool) {
	b.mu.Lock()
	b.seq++
	b.frames = append(b.frames, lua)
	b.mu.Unlock()
}

// begin marks the start of a Lua call.
func (b *budget) begin() { b.push(true) }

// end marks the end of a Lua call and reports whether the watchdog stopped it.
func (b *budget) end() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	b.frames = b.frames[:len(b.frames)-1]
	if !b.fired {
		return false
	}
	b.fired = false
	b.resetContext()
	return true
}

// suspend stops counting until the returned function is called.
func (b *budget) suspend() func() {
	b.push(false)
	return func() {
		b.mu.Lock()
		b.seq++
		b.frames = b.frames[:len(b.frames)-1]
		b.mu.Unlock()
	}
}

func (b *budget) luaRunning() bool { return len(b.frames) > 0 && b.frames[len(b.frames)-1] }

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
			case !b.luaRunning() || b.seq != seenSeq:
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
