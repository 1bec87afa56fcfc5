package luart

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The library functions that can build a value much larger than their arguments tell the
// memory budget its size before they build it (see memBudget); `..` does the same in
// luaConcat.

// allocate tells the memory budget that a library function (what) is about to build n bytes.
// Over the budget it stops the running call, as the time budget does, and raises.
func allocate(L *lua.LState, what string, n int64) { allocateMore(L, what, n, n) }

// allocateMore is allocate for a value built in parts: n more bytes, total in all.
func allocateMore(L *lua.LState, what string, n, total int64) {
	b := budgetOf(L)
	if b == nil {
		return
	}
	if err := b.mem.alloc(n, total, what); err != nil {
		if b.depth > 0 {
			b.stop(err)
		}
		L.RaiseError("%s", err.Text)
	}
}

// openBoundedLibs replaces the library functions of str and tbl that build large values.
func openBoundedLibs(L *lua.LState, str, tbl *lua.LTable) {
	bound := func(name string, size func(L *lua.LState) int64) {
		fn := str.RawGetString(name).(*lua.LFunction).GFunction
		what := "string." + name
		str.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			allocate(L, what, size(L))
			return fn(L)
		}))
	}
	bound("rep", func(L *lua.LState) int64 {
		return product(len(L.CheckString(1)), L.CheckInt(2))
	})
	bound("format", formatSize)
	// Upper- and lower-casing writes an invalid UTF-8 byte as a 3-byte replacement character.
	str.RawSetString("upper", L.NewFunction(strUpper))
	str.RawSetString("lower", L.NewFunction(strLower))
	bound("upper", func(L *lua.LState) int64 { return product(len(L.CheckString(1)), 3) })
	bound("lower", func(L *lua.LState) int64 { return product(len(L.CheckString(1)), 3) })
	bound("reverse", func(L *lua.LState) int64 { return int64(len(L.CheckString(1))) })
	tbl.RawSetString("concat", L.NewFunction(tableConcat))
}

// product is a*b, saturating instead of overflowing; 0 when either is negative.
func product(a, b int) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if int64(b) > math.MaxInt64/int64(a) {
		return math.MaxInt64
	}
	return int64(a) * int64(b)
}

// formatSize bounds the length of string.format's result: the format, every argument (a
// string as %q may escape each byte into 4), and the width and precision of every directive,
// which Go's fmt caps at 10^6 each.
func formatSize(L *lua.LState) int64 {
	const maxWidth, otherArg = 1_000_000, 330 // a %f of 1e308 has 309 digits
	f := L.CheckString(1)
	n := int64(len(f))
	arg := 2
	digits := func(i int) (int, int64) {
		var v int64
		for ; i < len(f) && f[i] >= '0' && f[i] <= '9'; i++ {
			v = min(v*10+int64(f[i]-'0'), maxWidth)
		}
		return i, v
	}
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		if i++; i < len(f) && f[i] == '%' {
			continue
		}
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		var width, precision int64
		i, width = digits(i)
		if i < len(f) && f[i] == '.' {
			i, precision = digits(i + 1)
		}
		n += width + precision
		switch v := L.Get(arg).(type) {
		case lua.LString:
			if i < len(f) && f[i] == 'q' {
				n += product(len(v), 4) + 2
			} else {
				n += int64(len(v))
			}
		default:
			n += otherArg
		}
		arg++
	}
	return n
}

// tableConcat is table.concat(list [, sep [, i [, j]]]) with gopher-lua's clamping of i and
// j to the list; unlike gopher-lua's, which pushes every element onto the Lua stack and so
// fails on lists of a few thousand, it writes into one buffer it sizes first.
func tableConcat(L *lua.LState) int {
	tbl := L.CheckTable(1)
	sep := L.OptString(2, "")
	n := tbl.Len()
	i := L.OptInt(3, 1)
	j := L.OptInt(4, n)
	if L.GetTop() == 3 && (i > n || i < 1) {
		L.Push(lua.LString(""))
		return 1
	}
	i = max(min(i, n), 1)
	j = min(j, n)
	if i > j {
		L.Push(lua.LString(""))
		return 1
	}
	size := product(len(sep), j-i)
	for k := i; k <= j; k++ {
		switch v := tbl.RawGetInt(k).(type) {
		case lua.LString:
			size += int64(len(v))
		case lua.LNumber:
			size += 24
		default:
			L.RaiseError("invalid value (%s) at index %d in table for concat", v.Type().String(), k)
		}
	}
	allocate(L, "table.concat", size)
	var b strings.Builder
	b.Grow(int(size))
	for k := i; k <= j; k++ {
		if k > i {
			b.WriteString(sep)
		}
		b.WriteString(lua.LVAsString(tbl.RawGetInt(k)))
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// openCoroutines makes every coroutine run under the budget of its creator's calls: a new
// thread's context is gopher-lua's child of its creator's, which would keep the Lua in it
// out of the budget's checkpoints. coroutine.wrap is rebuilt on create and resume: gopher-lua's
// own leaves its thread marked running after an error inside it, so that the coroutine
// answers every later call with "can not resume a running thread".
func openCoroutines(L *lua.LState, co *lua.LTable) {
	create := co.RawGetString("create").(*lua.LFunction).GFunction
	resume := co.RawGetString("resume").(*lua.LFunction).GFunction
	newThread := func(L *lua.LState) *lua.LState {
		create(L)
		th := L.CheckThread(L.GetTop())
		th.SetContext(L.Context())
		return th
	}
	co.RawSetString("create", L.NewFunction(func(L *lua.LState) int {
		newThread(L)
		return 1
	}))
	co.RawSetString("wrap", L.NewFunction(func(L *lua.LState) int {
		th := newThread(L)
		L.Pop(1)
		L.Push(L.NewFunction(func(L *lua.LState) int {
			L.Insert(th, 1)
			n := resume(L)
			if L.Get(-n) == lua.LFalse {
				L.Error(L.Get(-n+1), 1)
			}
			return n - 1
		}))
		return 1
	}))
}
