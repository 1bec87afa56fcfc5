package luart

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// maxCompareDepth bounds deep comparison and rendering, so a table that contains itself ends
// in a failure message instead of a stack overflow.
const maxCompareDepth = 100

// isArrayKind tells whether a table is a JSON array: marked by stoat.array (or read from a
// JSON array), or a non-empty sequence 1..n with no other keys. The same rule decides how
// fromLua writes a table, so equality here is equality of what the serdes would write.
func (rt *Runtime) isArrayKind(t *lua.LTable) bool {
	if rt.L.GetMetatable(t) == rt.arrayMT {
		return true
	}
	n := t.Len()
	return n > 0 && tableSize(t) == n
}

func tableSize(t *lua.LTable) int {
	count := 0
	t.ForEach(func(lua.LValue, lua.LValue) { count++ })
	return count
}

// deepEqual compares two test-state values as JSON-like data: scalars by value, stoat.null by
// identity, tables key by key, where an array never equals an object (an empty stoat.array
// is not an empty {}). Functions and other userdata compare by identity.
func (rt *Runtime) deepEqual(a, b lua.LValue, depth int) bool {
	if a == b {
		return true
	}
	ta, okA := a.(*lua.LTable)
	tb, okB := b.(*lua.LTable)
	if !okA || !okB || depth >= maxCompareDepth {
		return false
	}
	if rt.isArrayKind(ta) != rt.isArrayKind(tb) || tableSize(ta) != tableSize(tb) {
		return false
	}
	equal := true
	ta.ForEach(func(k, v lua.LValue) {
		if equal && !rt.deepEqual(v, tb.RawGet(k), depth+1) {
			equal = false
		}
	})
	return equal
}

// render writes v as indented Lua-literal text with sorted keys, one entry per line, so that
// a line diff of two renderings points at the entries that differ.
func (rt *Runtime) render(v lua.LValue) string {
	var sb strings.Builder
	rt.renderValue(&sb, v, 0)
	return sb.String()
}

func (rt *Runtime) renderValue(sb *strings.Builder, v lua.LValue, depth int) {
	switch x := v.(type) {
	case *lua.LNilType:
		sb.WriteString("nil")
	case lua.LBool:
		sb.WriteString(x.String())
	case lua.LNumber:
		sb.WriteString(luaNumberLiteral(float64(x)))
	case lua.LString:
		sb.WriteString(luaQuote(string(x)))
	case *lua.LUserData:
		if x == rt.null {
			sb.WriteString("stoat.null")
			return
		}
		fmt.Fprintf(sb, "<userdata %s>", rt.L.ToStringMeta(x).String())
	case *lua.LFunction:
		sb.WriteString("<function defined at " + defined(x) + ">")
	case *lua.LTable:
		rt.renderTable(sb, x, depth)
	default:
		fmt.Fprintf(sb, "<%s>", v.Type())
	}
}

func (rt *Runtime) renderTable(sb *strings.Builder, t *lua.LTable, depth int) {
	if depth >= maxCompareDepth {
		sb.WriteString("<table nested deeper than 100 levels>")
		return
	}
	size := tableSize(t)
	n := t.Len()
	marked := rt.L.GetMetatable(t) == rt.arrayMT
	list := n > 0 && size == n
	// Only where the marker changes what is written does the rendering show it.
	if marked && !list {
		sb.WriteString("stoat.array(")
		defer sb.WriteString(")")
	}
	if size == 0 {
		sb.WriteString("{}")
		return
	}
	indent := strings.Repeat("  ", depth+1)
	sb.WriteString("{\n")
	if list {
		for i := 1; i <= n; i++ {
			sb.WriteString(indent)
			rt.renderValue(sb, t.RawGetInt(i), depth+1)
			sb.WriteString(",\n")
		}
	} else {
		keys := make([]lua.LValue, 0, size)
		t.ForEach(func(k, _ lua.LValue) { keys = append(keys, k) })
		slices.SortFunc(keys, compareKeys)
		for _, k := range keys {
			sb.WriteString(indent)
			sb.WriteString(renderKey(k))
			sb.WriteString(" = ")
			rt.renderValue(sb, t.RawGet(k), depth+1)
			sb.WriteString(",\n")
		}
	}
	sb.WriteString(strings.Repeat("  ", depth))
	sb.WriteString("}")
}

// compareKeys orders numbers first (ascending), then strings, then anything else by text.
func compareKeys(a, b lua.LValue) int {
	rank := func(v lua.LValue) int {
		switch v.(type) {
		case lua.LNumber:
			return 0
		case lua.LString:
			return 1
		}
		return 2
	}
	if r := cmp.Compare(rank(a), rank(b)); r != 0 {
		return r
	}
	if na, ok := a.(lua.LNumber); ok {
		return cmp.Compare(float64(na), float64(b.(lua.LNumber)))
	}
	return strings.Compare(a.String(), b.String())
}

func renderKey(k lua.LValue) string {
	switch x := k.(type) {
	case lua.LString:
		if isLuaIdentifier(string(x)) {
			return string(x)
		}
		return "[" + luaQuote(string(x)) + "]"
	case lua.LNumber:
		return "[" + luaNumberLiteral(float64(x)) + "]"
	case lua.LBool:
		return "[" + x.String() + "]"
	}
	return "[<" + k.Type().String() + ">]"
}

var luaKeywords = set("and", "break", "do", "else", "elseif", "end", "false", "for", "function",
	"if", "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while")

func isLuaIdentifier(s string) bool {
	if s == "" || luaKeywords[s] {
		return false
	}
	for i, c := range s {
		letter := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func luaNumberLiteral(f float64) string {
	switch {
	case math.IsNaN(f):
		return "0/0"
	case math.IsInf(f, 1):
		return "math.huge"
	case math.IsInf(f, -1):
		return "-math.huge"
	case f == math.Trunc(f) && math.Abs(f) <= maxExactInt:
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// luaQuote writes s as a Lua 5.1 string literal; bytes that are not printable ASCII or UTF-8
// text are written as decimal escapes, which is all Lua 5.1 has.
func luaQuote(s string) string {
	var sb strings.Builder
	sb.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			sb.WriteByte('\\')
			sb.WriteByte(c)
		case c == '\n':
			sb.WriteString(`\n`)
		case c == '\r':
			sb.WriteString(`\r`)
		case c == '\t':
			sb.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&sb, `\%d`, c)
		default:
			sb.WriteByte(c)
		}
	}
	sb.WriteByte('"')
	return sb.String()
}

// maxDiffCells bounds the LCS table of lineDiff; beyond it the diff shows every expected line
// removed and every actual line added, which is still correct, only less precise.
const maxDiffCells = 4 << 20

// lineDiff returns the lines of a diff from expected to actual: "-" lines only in expected,
// "+" lines only in actual, " " lines in both.
func lineDiff(expected, actual string) []string {
	a := strings.Split(expected, "\n")
	b := strings.Split(actual, "\n")
	if (len(a)+1)*(len(b)+1) > maxDiffCells {
		out := make([]string, 0, len(a)+len(b))
		for _, l := range a {
			out = append(out, "-"+l)
		}
		for _, l := range b {
			out = append(out, "+"+l)
		}
		return out
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			out = append(out, " "+a[i])
			i++
			j++
		case j < len(b) && (i == len(a) || lcs[i][j+1] > lcs[i+1][j]):
			out = append(out, "+"+b[j])
			j++
		default:
			out = append(out, "-"+a[i])
			i++
		}
	}
	return out
}
