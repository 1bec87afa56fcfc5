package luart

import (
	"fmt"
	"math"
	"runtime/metrics"
	"time"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// memBudget bounds the memory the scripts' Lua data take (agent.lua.memory.max.bytes).
// gopher-lua allocates with Go's allocator and has no hook to count what it allocates, so the
// budget works in two parts:
//
//   - The library functions that can build a large value in one call (string.rep,
//     table.concat, string.format, gsub, upper, lower, reverse, and `..`, which the compiler
//     turns into a call, see concat.go) report its size before they build it. A value larger
//     than the whole budget is refused; when the values built since the last measure could
//     have taken the data past the budget, the data is measured first.
//   - At the time budget's checkpoints, when Go's live heap has grown by more than the budget
//     has left since the last measure, the data is measured: that catches data that grows
//     one table entry at a time.
//
// A measure walks what the scripts can reach — their globals, the modules, the functions of
// the calls in progress and of the calls seen running at the last measures (and what their
// upvalues hold), the locals of the running frames — and adds up estimates of each object's
// size (measured on gopher-lua v1.1.2, within about 20%). Data over the budget stops the call
// in progress, and every later call fails at once, until a measure (at most one a second)
// finds the data back under the budget.
type memBudget struct {
	rt     *Runtime
	limit  int64
	used   int64  // bytes of Lua data the last measure found
	built  int64  // bytes the bounded library functions built since
	heapAt uint64 // Go's live heap at the last measure, or the lowest seen since
	heap   []metrics.Sample
	over   bool // the last measure found the data over the budget
	overAt time.Time
	walk   memWalk
	// recent are the functions of calls that were running at a measure, with the number of
	// the last measure that saw them: a callback's upvalues hold its data between calls.
	recent   map[*lua.LFunction]int
	measures int
}

// recentMeasures is how many measures a function stays a root after it was last seen
// running; a topology rebuilt after a failed epoch leaves its old callbacks behind.
const recentMeasures = 8

// The size estimates, in bytes (see memBudget).
const (
	sizeTable     = 96
	sizeArraySlot = 16
	sizeHashEntry = 160
	sizeString    = 16 // plus its bytes
	sizeNumber    = 8
	sizeFunction  = 88
	sizeUpvalue   = 48
	sizeUserData  = 64
	sizeCallFrame = 80 // per call-stack slot of a thread, and 16 per registry slot
	// distinctString is the length from which strings are counted once however many
	// values share them; shorter ones are counted per value.
	distinctString = 256
)

func (m *memBudget) init(rt *Runtime, limit int64) {
	m.rt = rt
	m.limit = limit
	m.heap = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	m.recent = map[*lua.LFunction]int{}
	m.walk.seen = map[any]struct{}{}
	m.heapAt = m.liveHeap()
}

func (m *memBudget) liveHeap() uint64 {
	metrics.Read(m.heap)
	if m.heap[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return m.heap[0].Value.Uint64()
}

// beginCall fails a call that begins while the data is over the budget.
func (m *memBudget) beginCall() *BudgetError {
	if !m.over {
		return nil
	}
	if time.Since(m.overAt) >= time.Second {
		m.measure()
	}
	if m.over {
		return m.overError()
	}
	return nil
}

// checkpoint measures the data when the live heap grew by more than the budget has left.
func (m *memBudget) checkpoint() *BudgetError {
	live := m.liveHeap()
	m.heapAt = min(m.heapAt, live)
	if grown := int64(live - m.heapAt); m.used+m.built+grown <= m.limit {
		return nil
	}
	if m.measure(); m.over {
		return m.overError()
	}
	return nil
}

// alloc is called by a bounded library function (what) before it builds n more bytes of a
// value that is then total bytes long.
func (m *memBudget) alloc(n, total int64, what string) *BudgetError {
	if total > m.limit {
		return &BudgetError{Memory: true, Text: fmt.Sprintf("%s would build %s, more than the Lua memory budget of %s (agent.lua.memory.max.bytes)", what, byteSize(total), byteSize(m.limit))}
	}
	if m.built += n; m.used+m.built <= m.limit {
		return nil
	}
	if m.measure(); m.over {
		return m.overError()
	}
	if m.used+n > m.limit {
		return &BudgetError{Memory: true, Text: fmt.Sprintf("%s would build %s, and the scripts' Lua data already take %s of the Lua memory budget of %s (agent.lua.memory.max.bytes)", what, byteSize(n), byteSize(m.used), byteSize(m.limit))}
	}
	m.built = n
	return nil
}

func (m *memBudget) overError() *BudgetError {
	return &BudgetError{Memory: true, Text: fmt.Sprintf("the scripts' Lua data take more than the Lua memory budget of %s (agent.lua.memory.max.bytes)", byteSize(m.limit))}
}

// measure walks the scripts' data (see memBudget).
func (m *memBudget) measure() {
	m.measures++
	L := m.rt.L
	w := &m.walk
	w.max = m.limit
	w.add(L.G.Global)
	w.add(L.G.Registry)
	for _, env := range m.rt.envs {
		w.add(env)
	}
	for _, mod := range m.rt.modules {
		w.add(mod)
	}
	if b := m.rt.budget; b != nil {
		for _, fn := range b.fns {
			if fn != nil {
				m.recent[fn] = m.measures
			}
		}
	}
	for fn, at := range m.recent {
		if m.measures-at > recentMeasures {
			delete(m.recent, fn)
			continue
		}
		w.add(fn)
	}
	w.add(L)
	if cur := L.G.CurrentThread; cur != nil {
		w.add(cur)
	}
	m.used = w.run()
	m.built = 0
	m.heapAt = m.liveHeap()
	if m.over = m.used > m.limit; m.over {
		m.overAt = time.Now()
	}
}

// memWalk adds up the estimated sizes of the Lua objects reachable from what was added. It
// stops once past max: only whether the data fit matters.
type memWalk struct {
	seen  map[any]struct{}
	todo  []lua.LValue
	total int64
	max   int64
}

func (w *memWalk) add(v lua.LValue) {
	switch x := v.(type) {
	case lua.LString:
		if len(x) >= distinctString {
			p := unsafe.StringData(string(x))
			if _, ok := w.seen[p]; ok {
				return
			}
			w.seen[p] = struct{}{}
		}
		w.total += sizeString + int64(len(x))
	case lua.LNumber:
		w.total += sizeNumber
	case *lua.LTable:
		w.push(x, x == nil)
	case *lua.LFunction:
		w.push(x, x == nil)
	case *lua.LUserData:
		w.push(x, x == nil)
	case *lua.LState:
		w.push(x, x == nil)
	}
}

// push queues an object not seen yet.
func (w *memWalk) push(v lua.LValue, isNil bool) {
	if isNil {
		return
	}
	if _, ok := w.seen[v]; ok {
		return
	}
	w.seen[v] = struct{}{}
	w.todo = append(w.todo, v)
}

// run walks everything added and returns the total; it forgets the objects it saw, so that
// the walk keeps nothing alive.
func (w *memWalk) run() int64 {
	for len(w.todo) > 0 && w.total <= w.max {
		v := w.todo[len(w.todo)-1]
		w.todo[len(w.todo)-1] = nil
		w.todo = w.todo[:len(w.todo)-1]
		switch x := v.(type) {
		case *lua.LTable:
			w.total += sizeTable
			w.add(x.Metatable)
			array := float64(x.Len())
			x.ForEach(func(k, v lua.LValue) {
				if n, ok := k.(lua.LNumber); ok && float64(n) >= 1 && float64(n) <= array && math.Trunc(float64(n)) == float64(n) {
					w.total += sizeArraySlot
				} else {
					w.total += sizeHashEntry
					w.add(k)
				}
				w.add(v)
			})
		case *lua.LFunction:
			w.total += sizeFunction + sizeUpvalue*int64(len(x.Upvalues))
			w.add(x.Env)
			for _, uv := range x.Upvalues {
				w.add(uv.Value())
			}
		case *lua.LUserData:
			w.total += sizeUserData
			w.add(x.Metatable)
			w.add(x.Env)
		case *lua.LState:
			w.total += int64(x.Options.RegistrySize)*16 + int64(x.Options.CallStackSize)*sizeCallFrame
			w.addFrames(x)
		}
	}
	total := w.total
	clear(w.seen)
	clear(w.todo)
	w.todo, w.total = w.todo[:0], 0
	return total
}

// addFrames adds the locals of every frame on a thread's call stack.
func (w *memWalk) addFrames(th *lua.LState) {
	for level := 0; level < max(th.Options.CallStackSize, 1); level++ {
		dbg, ok := th.GetStack(level)
		if !ok {
			return
		}
		for n := 1; ; n++ {
			name, v := th.GetLocal(dbg, n)
			if name == "" {
				break
			}
			w.add(v)
		}
	}
}

// byteSize renders n bytes in binary units, as the docs write budgets.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
