package luart

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// strLower and strUpper are string.lower and string.upper as gopher-lua has them, except
// that a string the call leaves unchanged (an ASCII string already in that case, as most
// lines of a word count are for lower) is returned as the very value passed in: gopher-lua
// boxes strings.ToLower's result into a new LString even when it is the argument itself.
func strLower(L *lua.LState) int { return changeCase(L, 'A', strings.ToLower) }

func strUpper(L *lua.LState) int { return changeCase(L, 'a', strings.ToUpper) }

// changeCase pushes to(argument 1); from is the first of the 26 ASCII letters that to
// changes.
func changeCase(L *lua.LState, from byte, to func(string) string) int {
	// The LValue is pushed back as it came: pushing the LString would box it anew.
	arg := L.Get(1)
	if s, ok := arg.(lua.LString); ok && unchangedASCII(string(s), from) {
		L.Push(arg)
		return 1
	}
	L.Push(lua.LString(to(L.CheckString(1))))
	return 1
}

// unchangedASCII reports whether s is ASCII with no letter in from..from+25.
func unchangedASCII(s string, from byte) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || c-from < 26 {
			return false
		}
	}
	return true
}
