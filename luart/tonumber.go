package luart

import (
	"errors"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// luaToNumber is Lua 5.1's tonumber(e [, base]). gopher-lua's parses a string without a
// "." as an integer only, so tonumber("1e3") and tonumber("2E-5") were nil where Lua 5.1
// (strtod) gives 1000 and 2e-05: a script reading numbers written in exponent form from
// records got nil. With a base other than 10, e is read as strtoul reads it.
func luaToNumber(L *lua.LState) int {
	if L.Get(2) == lua.LNil || L.CheckInt(2) == 10 {
		switch v := L.CheckAny(1).(type) {
		case lua.LNumber:
			L.Push(v)
		case lua.LString:
			if n, ok := str2number(string(v)); ok {
				L.Push(lua.LNumber(n))
			} else {
				L.Push(lua.LNil)
			}
		default:
			L.Push(lua.LNil)
		}
		return 1
	}
	s, base := L.CheckString(1), L.CheckInt(2)
	if base < 2 || base > 36 {
		L.ArgError(2, "base out of range")
	}
	if n, ok := strtoul(s, base); ok {
		L.Push(lua.LNumber(n))
	} else {
		L.Push(lua.LNil)
	}
	return 1
}

// luaSpace is C's isspace, which Lua 5.1 skips around a number.
const luaSpace = " \t\n\v\f\r"

// cString is s as C sees it: up to its first NUL.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// str2number is Lua 5.1's luaO_str2d: a decimal number as strtod reads it (exponents,
// inf and nan included), or a hexadecimal integer 0x..., with spaces around it.
func str2number(s string) (float64, bool) {
	s = strings.Trim(cString(s), luaSpace)
	body, neg := strings.CutPrefix(s, "-")
	if !neg {
		body = strings.TrimPrefix(s, "+")
	}
	if len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		if n, ok := parseDigits(body[2:], 16); ok {
			if neg {
				return -n, true
			}
			return n, true
		}
	}
	// Go reads "1_000" as 1000; strtod stops at the "_".
	if strings.IndexByte(s, '_') >= 0 {
		return 0, false
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return n, true
}

// strtoul reads s as C's strtoul does in base (2 to 36), spaces around it allowed: a
// negative number wraps around 2^64, and a number too large for 64 bits is 2^64 − 1.
func strtoul(s string, base int) (float64, bool) {
	s = strings.Trim(cString(s), luaSpace)
	body, neg := strings.CutPrefix(s, "-")
	if !neg {
		body = strings.TrimPrefix(s, "+")
	}
	if base == 16 && len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		body = body[2:]
	}
	u, err := strconv.ParseUint(body, base, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		u = math.MaxUint64
	case err != nil:
		return 0, false
	}
	if neg {
		u = -u
	}
	return float64(u), true
}

// parseDigits reads a whole string of digits in base, as a float when it exceeds 64 bits.
func parseDigits(s string, base int) (float64, bool) {
	u, err := strconv.ParseUint(s, base, 64)
	if err == nil {
		return float64(u), true
	}
	if !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	n := 0.0
	for _, c := range s {
		d, _ := strconv.ParseUint(string(c), base, 8)
		n = n*float64(base) + float64(d)
	}
	return n, true
}
