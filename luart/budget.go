package luart

import (
	"fmt"
	"runtime"
	"time"

	lua "github.com/yuin/gopher-lua"
	"golang.org/x/sys/unix"
)

// budget bounds one call into Lua: the outermost call and everything that runs before it
// returns — nested Lua calls, and the processors, stores and Lua callbacks that ctx:forward
// runs downstream — share one time limit (agent.lua.call.timeout) and the memory budget
// (memBudget).
//
// The time counted is the CPU time of the thread running the call, so a call that waits (for
// the producer, or for a core while HTTP queries flood a starved process) is not charged for
// the wait, and what it forwards into is. The outermost call locks its goroutine to its
// thread, which makes the thread's CPU clock the call's.
//
// The budget is the Lua states' context. gopher-lua's VM reads ctx.Done() before every
// instruction (the pattern matcher every patCheckEvery steps); Done counts the reads and every
// checkEvery of them is a checkpoint: the CPU clock and the memory budget are read there, not
// at every call, which keeps the per-call cost at a few field writes. Once a call is over
// budget Done returns a closed channel, so the VM raises Err() at the current line, and again
// at every later instruction until the outermost call returns: a pcall in the script cannot
// swallow it.
//
// While the call is within budget Done returns nil, the value of a context that is never
// cancelled. That keeps context.WithCancel, which gopher-lua's NewThread calls for every
// coroutine, from starting a goroutine per coroutine; it also means that, unlike a
// context.Context, Done does not always return the same value. Its only readers (the VM, the
// pattern matcher, NewThread) ask again before every look.
type budget struct {
	limit time.Duration
	mem   memBudget

	depth int    // nesting of budgeted calls
	reads uint32 // Done reads since the last checkpoint
	// start is the thread's CPU time at the outermost call's first checkpoint, or -1 before
	// it. Not reading the clock when the call begins keeps a system call off the per-call
	// path; what runs before the first checkpoint (at most checkEvery instructions) is not
	// counted.
	start time.Duration
	err   *BudgetError // why the running call was stopped
	done  <-chan struct{}
	// fns are the functions of the budgeted calls in progress, outermost first: the memory
	// budget measures what they reach.
	fns []*lua.LFunction
}

// checkEvery is how many reads of Done pass between checkpoints. A Lua instruction takes
// 10-50 ns, so a checkpoint comes every 40-200 µs of Lua; one costs about 1 µs (the thread
// CPU clock is a system call, and the heap size a runtime/metrics read).
const checkEvery = 4096

// BudgetError is why the budget stopped a Lua call: its time or its memory ran out.
type BudgetError struct {
	Memory bool // false: the time budget
	Text   string
}

func (e *BudgetError) Error() string { return e.Text }

// closedChan is the Done channel of a stopped call.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func newBudget(rt *Runtime, limit time.Duration, memLimit int64) (*budget, error) {
	if _, err := threadCPUTime(); err != nil {
		return nil, fmt.Errorf("the Lua time budget needs the thread CPU clock: %w", err)
	}
	b := &budget{limit: limit, start: -1}
	b.mem.init(rt, memLimit)
	return b, nil
}

// threadCPUTime is the CPU time the calling thread has used.
func threadCPUTime() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, err
	}
	return time.Duration(ts.Nano()), nil
}

// begin marks the start of a budgeted call of fn.
func (b *budget) begin(fn *lua.LFunction) {
	if b.depth == 0 {
		runtime.LockOSThread()
		b.start = -1
		if err := b.mem.beginCall(); err != nil {
			b.stop(err)
		}
	}
	b.depth++
	b.fns = append(b.fns, fn)
}

// end marks the end of a budgeted call and returns what stopped it, if the budget did. A
// nested call stopped by the budget reports it too: its caller is over budget as well.
func (b *budget) end() *BudgetError {
	b.depth--
	b.fns[len(b.fns)-1] = nil
	b.fns = b.fns[:len(b.fns)-1]
	err := b.err
	if b.depth == 0 {
		b.err, b.done = nil, nil
		runtime.UnlockOSThread()
	}
	return err
}

// stop stops the running call: every Lua instruction from now until the outermost call
// returns raises err.
func (b *budget) stop(err *BudgetError) {
	if b.err == nil {
		b.err, b.done = err, closedChan
	}
}

// Done is read by the VM before every instruction; see budget.
func (b *budget) Done() <-chan struct{} {
	if b.reads++; b.reads >= checkEvery {
		b.checkpoint()
	}
	return b.done
}

// Err is what the VM raises once Done is closed.
func (b *budget) Err() error {
	if b.err == nil {
		return nil
	}
	return b.err
}

func (b *budget) Deadline() (time.Time, bool) { return time.Time{}, false }
func (b *budget) Value(any) any               { return nil }

func (b *budget) checkpoint() {
	b.reads = 0
	if b.depth == 0 || b.err != nil {
		return
	}
	now, _ := threadCPUTime() // checked to work in newBudget
	switch {
	case b.start < 0:
		b.start = now
	case now-b.start > b.limit:
		b.stop(&BudgetError{Text: fmt.Sprintf("Lua call exceeded its time budget of %s of CPU time (agent.lua.call.timeout)", b.limit)})
		return
	}
	if err := b.mem.checkpoint(); err != nil {
		b.stop(err)
	}
}

// budgetOf is the budget of the Lua state running a library function.
func budgetOf(L *lua.LState) *budget {
	b, _ := L.Context().(*budget)
	return b
}
