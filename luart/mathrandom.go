package luart

import (
	"math/rand/v2"

	lua "github.com/yuin/gopher-lua"
)

// mathRandom is Lua 5.1's math.random: gopher-lua's calls rand.Intn with whatever it is
// given, so math.random(0) panicked inside Go and the error lost the file and line of the
// call. Bad arguments are argument errors here, as in Lua 5.1.
func mathRandom(L *lua.LState) int {
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(rand.Float64()))
	case 1:
		m := L.CheckInt64(1)
		if m < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(1 + rand.Int64N(m)))
	case 2:
		m, n := L.CheckInt64(1), L.CheckInt64(2)
		if m > n {
			L.ArgError(2, "interval is empty")
		}
		span := uint64(n - m)
		if span == ^uint64(0) {
			L.Push(lua.LNumber(int64(rand.Uint64())))
			break
		}
		L.Push(lua.LNumber(m + int64(rand.Uint64N(span+1))))
	default:
		L.RaiseError("wrong number of arguments to random")
	}
	return 1
}
