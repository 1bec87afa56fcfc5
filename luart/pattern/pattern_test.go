package pattern

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// patternCases are Lua expressions and what Lua 5.1 returns for them: the results joined
// by ", " (strings quoted), or "error: " and the error message. A "gopher-lua:" comment
// marks a case where gopher-lua's own string library answered otherwise.
var patternCases = []struct{ expr, want string }{
	// find: init, plain, anchors
	{`("hello world"):find("o w")`, `5, 7`},
	{`("hello world"):find("o", 6)`, `8, 8`},
	{`("hello world"):find("l")`, `3, 3`},
	{`("hello"):find("xyz")`, `nil`},
	{`("hello"):find("")`, `1, 0`},
	{`("hello"):find("", 3)`, `3, 2`},  // gopher-lua: 1, 0
	{`("hello"):find("", 10)`, `6, 5`}, // gopher-lua: 1, 0
	{`("abc"):find("", 4)`, `4, 3`},    // gopher-lua: 1, 0
	{`("abc"):find("c", 4)`, `nil`},
	{`("abc"):find("b", 10, true)`, `nil`}, // gopher-lua: a Go panic (slice bounds)
	{`("hello"):find("l", -2)`, `4, 4`},
	{`("hello"):find("h", -10)`, `1, 1`},
	{`("abc"):find("a", 0)`, `1, 1`},
	{`("a.b"):find(".", 1, true)`, `2, 2`},
	{`("a.b"):find(".")`, `1, 1`},
	{`("a.b"):find(".", 1, false)`, `1, 1`},
	{`("a.b"):find(".", 1, 1)`, `2, 2`},
	{`("a+b"):find("+", 1, true)`, `2, 2`},
	{`("a+b"):find("a+b")`, `nil`},
	{`("abc"):find("b", nil, true)`, `2, 2`},
	{`("hello"):find("l+")`, `3, 4`},
	{`("hello"):find("(l)(l)")`, `3, 4, "l", "l"`},
	{`("hello"):find("()ll()")`, `3, 4, 3, 5`},
	{`("hello"):find("^h")`, `1, 1`},
	{`("hello"):find("^e")`, `nil`},
	{`("hello"):find("^e", 2)`, `2, 2`},
	{`("hello"):find("o$")`, `5, 5`},
	{`("hello"):find("l$")`, `nil`},
	{`("a$b"):find("$b")`, `2, 3`},
	{`("a^b"):find("a^b")`, `1, 3`},
	{`("hello"):find("^")`, `1, 0`},
	{`("hello"):find("$")`, `6, 5`},
	{`("hello"):find("^$")`, `nil`},
	{`(""):find("^$")`, `1, 0`},
	{`(""):find("")`, `1, 0`},
	{`(""):find("a*")`, `1, 0`},
	{`("a$"):match("a$$")`, `"a$"`},
	{`string.find(12345, 34)`, `3, 4`},
	{`("12"):find(2)`, `2, 2`},
	{`("a\0b"):find("\0", 1, true)`, `2, 2`},
	{`("a\0b"):find("%z")`, `2, 2`},

	// match
	{`("hello world"):match("%w+")`, `"hello"`},
	{`("hello world"):match("(%w+) (%w+)")`, `"hello", "world"`},
	{`("key = value"):match("^(%w+)%s*=%s*(%w+)$")`, `"key", "value"`},
	{`("hello"):match("()ll()")`, `3, 5`},
	{`("hello"):match(".-(l+)(.*)")`, `"ll", "o"`},
	{`("hello"):match("x")`, `nil`}, // gopher-lua: no value
	{`("hello"):match("l", 4)`, `"l"`},
	{`("hello"):match("^l", 4)`, `"l"`},
	{`("hello"):match("^l", -2)`, `"l"`},
	{`("hello"):match("()", 10)`, `6`}, // gopher-lua: no value
	{`("hello"):match("")`, `""`},
	{`("abc"):match("c", -1)`, `"c"`},
	{`("  trim  "):match("^%s*(.-)%s*$")`, `"trim"`},
	{`("2024-01-15"):match("(%d+)-(%d+)-(%d+)")`, `"2024", "01", "15"`},
	{`("abc"):match("((a)(b))")`, `"ab", "a", "b"`},
	{`("abc"):match("(a(b)c)")`, `"abc", "b"`},
	{`("abc"):match("a(.)c")`, `"b"`},
	{`("key=val;k2=v2"):match("(.-)=(.-);")`, `"key", "val"`},
	{`("aaa"):match("(a*)(a)")`, `"aa", "a"`},
	{`("abcd"):match("(.-)(%w)$")`, `"abc", "d"`},
	{`string.match(3.5, "%d+")`, `"3"`},
	{`("a\0b"):match(".+")`, `"a\x00b"`},

	// single-character classes
	{`("x1 y2\tZ"):gsub("%a", "A")`, `"A1 A2\tA", 3`},
	{`("ab12CD"):gsub("%d", "#")`, `"ab##CD", 2`},
	{`("ab12CD"):gsub("%l", "#")`, `"##12CD", 2`},
	{`("ab12CD"):gsub("%u", "#")`, `"ab12##", 2`},
	{`("a b\tc\nd\re\vf\fg"):gsub("%s", "_")`, `"a_b_c_d_e_f_g", 6`},
	{`("a,b.c!d"):gsub("%p", "")`, `"abcd", 3`},
	{`("a\1b\127c"):gsub("%c", "")`, `"abc", 2`},
	{`("ab_12"):gsub("%w", "")`, `"_", 4`},
	{`("0x1F:gz"):gsub("%x", "")`, `"x:gz", 3`},
	{`("a\0b"):gsub("%z", "Z")`, `"aZb", 1`},
	{`("ab12 CD"):gsub("%A", "")`, `"abCD", 3`},
	{`("ab12"):gsub("%D", "")`, `"12", 2`},
	{`("a b"):gsub("%S", "x")`, `"x x", 2`},
	{`("aB1"):gsub("%L", "")`, `"a", 2`},
	{`("aB1"):gsub("%U", "")`, `"B", 2`},
	{`("a_1!"):gsub("%W", "")`, `"a1", 2`},
	{`("a,b"):gsub("%P", "")`, `",", 2`},
	{`("aG9"):gsub("%X", "")`, `"a9", 1`},
	{`("a\1b"):gsub("%C", "")`, `"\x01", 2`},
	{`("a\0b"):gsub("%Z", "")`, `"\x00", 2`},
	{`("\200\255a"):gsub("%a", "")`, `"\xc8\xff", 1`},
	{`("\200"):find("%p")`, `nil`},
	{`("a.b"):gsub("%.", "!")`, `"a!b", 1`},
	{`("100%"):gsub("%%", " percent")`, `"100 percent", 1`},
	{`("a(b)"):gsub("%(", "[")`, `"a[b)", 1`},
	{`("q"):find("%q")`, `1, 1`},
	{`("Q"):find("%Q")`, `1, 1`},
	{`("q"):find("%Q")`, `nil`},
	{`("a]b"):find("]")`, `2, 2`},
	{`("ab"):find(".")`, `1, 1`},

	// sets
	{`("hello"):gsub("[aeiou]", "*")`, `"h*ll*", 2`},
	{`("hello"):gsub("[^aeiou]", "*")`, `"*e**o", 3`},
	{`("a-z"):gsub("[a-c]", "")`, `"-z", 1`},
	{`("a-z"):gsub("[%a-]", "")`, `"", 3`},
	{`("a-z"):gsub("[-a]", "")`, `"z", 2`},
	{`("a-z"):gsub("[a-]", "")`, `"z", 2`},
	{`("]x"):gsub("[]]", "")`, `"x", 1`},
	{`("]x^"):gsub("[^]]", "")`, `"]", 2`},
	{`("a^b"):gsub("[b^]", "")`, `"a", 2`},
	{`("a5Z_"):gsub("[%d_]", "")`, `"aZ", 2`},
	{`("a]b"):gsub("[%]]", "")`, `"ab", 1`},
	{`("a-b"):gsub("[%-]", "")`, `"ab", 1`},
	{`("a.b*c"):gsub("[%.%*]", "")`, `"abc", 2`},
	{`("\200a"):gsub("[\128-\255]", "x")`, `"xa", 1`},
	{`("AZaz"):gsub("[A-Z]", "")`, `"az", 2`},
	{`("m"):find("[z-a]")`, `nil`},
	{`("a1 "):gsub("[^%s%d]", "")`, `"1 ", 1`},
	{`("x"):find("[%a]")`, `1, 1`},
	{`("%d"):gsub("[a-%d]", "")`, `"%", 1`},                          // gopher-lua: "%d", 0
	{`("x"):find("[a")`, `error: malformed pattern (missing ']')`},   // gopher-lua: "unexpected EOS at 1"
	{`("x"):find("[")`, `error: malformed pattern (missing ']')`},    // gopher-lua: "unexpected EOS at 0"
	{`("x"):find("[]")`, `error: malformed pattern (missing ']')`},   // gopher-lua: "unexpected EOS at 1"
	{`("x"):find("[^]")`, `error: malformed pattern (missing ']')`},  // gopher-lua: "unexpected EOS at 2"
	{`("x"):find("[a%")`, `error: malformed pattern (missing ']')`},  // gopher-lua: "unexpected EOS at EOS"
	{`("x"):find("[a%]")`, `error: malformed pattern (missing ']')`}, // gopher-lua: "unexpected EOS at 3"
	{`("x"):find("%")`, `error: malformed pattern (ends with '%')`},  // gopher-lua: nil
	{`("a"):find("a%")`, `error: malformed pattern (ends with '%')`}, // gopher-lua: nil
	{`("x"):find("a%")`, `nil`},
	{`("x"):find("y[")`, `nil`},          // gopher-lua: an error (it parses the whole pattern first)
	{`("a"):gsub("[", "", 0)`, `"a", 0`}, // gopher-lua: an error

	// repetitions
	{`("aaab"):match("a*")`, `"aaa"`},
	{`("baaa"):match("a*")`, `""`},
	{`("aaab"):match("a-b")`, `"aaab"`},
	{`("aaab"):match("a-")`, `""`},
	{`("aaa"):match("^a-$")`, `"aaa"`},
	{`("ab"):match("a?b")`, `"ab"`},
	{`("b"):match("a?b")`, `"b"`},
	{`("aab"):match("a?ab")`, `"aab"`},
	{`("<a><b>"):match("<.*>")`, `"<a><b>"`},
	{`("<a><b>"):match("<.->")`, `"<a>"`},
	{`("aaa"):match("a+a")`, `"aaa"`},
	{`("a+"):match("a+%+")`, `"a+"`},
	{`("***"):match("**")`, `"***"`},
	{`("a"):match("a**")`, `nil`}, // gopher-lua: no value
	{`("x?"):match("x?%?")`, `"x?"`},
	{`("-a"):match("-a")`, `"-a"`},
	{`("(.)"):match("%(%.%)")`, `"(.)"`},

	// gmatch: lazy, empty matches advance by one, '^' is a plain character
	{`list(("one two  three"):gmatch("%a+"))`, `"one,two,three"`},
	{`list(("k1=v1, k2=v2"):gmatch("(%w+)=(%w+)"))`, `"k1|v1,k2|v2"`},
	{`list(("abc"):gmatch(""))`, `",,,"`},
	{`list(("abc"):gmatch("()"))`, `"1,2,3,4"`},
	{`list(("aaa"):gmatch("a*"))`, `"aaa,"`},
	{`list(("abc"):gmatch("b*"))`, `",b,,"`},
	{`list(("^a^a"):gmatch("^a"))`, `"^a,^a"`}, // gopher-lua: "" (it anchors)
	{`list(("hello"):gmatch("l"))`, `"l,l"`},
	{`list(("a1b2"):gmatch("%d()"))`, `"3,5"`},
	{`list(("THE (quick) fox"):gmatch("%f[%a]%a+"))`, `"THE,quick,fox"`},                    // gopher-lua: "fox" (no %f)
	{`(function() local it = ("a b c"):gmatch("%a") return it(), it() end)()`, `"a", "b"`},  // gopher-lua: an error (the iterator wants its state)
	{`(function() local it = ("a"):gmatch("a") return it(), it(), it() end)()`, `"a", nil`}, // gopher-lua: an error
	{`type(("a"):gmatch("["))`, `"function"`},                                               // gopher-lua: an error
	{`list(("a"):gmatch("["))`, `error: malformed pattern (missing ']')`},                   // gopher-lua: "unexpected EOS at 0"
	{`list(("a"):gmatch("(a"))`, `error: unfinished capture`},

	// gsub
	{`("hello world"):gsub("o", "0")`, `"hell0 w0rld", 2`},
	{`("hello world"):gsub("o", "0", 1)`, `"hell0 world", 1`},
	{`("hello world"):gsub("o", "0", 0)`, `"hello world", 0`},
	{`("hello world"):gsub("o", "0", -1)`, `"hello world", 0`}, // gopher-lua: "hell0 w0rld", 2
	{`("hello world"):gsub("(%w+)", "<%1>")`, `"<hello> <world>", 2`},
	{`("hello world"):gsub("%w+", "%0 %0")`, `"hello hello world world", 2`},
	{`("hello world"):gsub("%w+", "%1")`, `"hello world", 2`},
	{`("hello world"):gsub("(%w+) (%w+)", "%2 %1")`, `"world hello", 1`},
	{`("abc"):gsub("%w", "%0%0")`, `"aabbcc", 3`},
	{`("abc"):gsub("b", "%%")`, `"a%c", 1`},
	{`("abc"):gsub("b", "%x")`, `"axc", 1`},   // gopher-lua: "a%xc", 1
	{`("abc"):gsub("b", "%")`, `"a\x00c", 1`}, // gopher-lua: "a%c", 1
	{`("abc"):gsub("()b()", "%1-%2")`, `"a2-3c", 1`},
	{`("abc"):gsub("b", 5)`, `"a5c", 1`},     // gopher-lua: an error
	{`("abc"):gsub("b", 1.5)`, `"a1.5c", 1`}, // gopher-lua: an error
	{`("abc"):gsub("l", "%2")`, `"abc", 0`},
	{`("hello"):gsub("l", "%2")`, `error: invalid capture index`},
	{`("abc"):gsub("(b)", "%2")`, `error: invalid capture index`},
	{`("abc"):gsub("", "-")`, `"-a-b-c-", 4`},
	{`("abc"):gsub("b*", "-")`, `"-a--c-", 4`},
	{`("aaa"):gsub("a*", "-")`, `"--", 2`},
	{`("hello world"):gsub("%w*", "x")`, `"xx xx", 4`},
	{`("aaa"):gsub("^a", "b")`, `"baa", 1`},
	{`("baa"):gsub("^a", "b")`, `"baa", 0`},
	{`("abc"):gsub("^", ">")`, `">abc", 1`},
	{`("abc"):gsub("$", "<")`, `"abc<", 1`},
	{`("abc"):gsub("^$", "x")`, `"abc", 0`},
	{`(""):gsub("^$", "x")`, `"x", 1`},
	{`string.gsub(123, "2", "x")`, `"1x3", 1`},
	{`("$name is $age"):gsub("%$(%w+)", {name = "Ann", age = 7})`, `"Ann is 7", 2`},
	{`("$a $b"):gsub("%$(%w+)", {a = "1"})`, `"1 $b", 2`},
	{`("$a"):gsub("%$(%w+)", {a = false})`, `"$a", 1`},
	{`("a b"):gsub("%w", {a = "A"})`, `"A b", 2`},
	{`("ab"):gsub("()", {[1] = "<", [3] = ">"})`, `"<ab>", 3`},
	{`("ab"):gsub("%w", setmetatable({}, {__index = function(_, k) return k:upper() end}))`, `"AB", 2`},
	{`("a"):gsub("a", {a = {}})`, `error: invalid replacement value (a table)`},     // gopher-lua: "", 1
	{`("a"):gsub("a", {a = true})`, `error: invalid replacement value (a boolean)`}, // gopher-lua: "", 1
	{`("hello world"):gsub("%w+", string.upper)`, `"HELLO WORLD", 2`},
	{`("k=v"):gsub("(%w)=(%w)", function(k, v) return v .. "=" .. k end)`, `"v=k", 1`},
	{`("abc"):gsub("%w", function(c) if c == "b" then return "B" end end)`, `"aBc", 3`},
	{`("abc"):gsub("b", function() return 42 end)`, `"a42c", 1`},
	{`("abc"):gsub("()b", function(p) return p end)`, `"a2c", 1`},
	{`("abc"):gsub("b", function() return {} end)`, `error: invalid replacement value (a table)`}, // gopher-lua: "ac", 1
	{`("abc"):gsub("b", function() error("boom") end)`, `error: boom`},
	{`("a b"):gsub("%a", function(w) return (w:gsub(".", "%0%0")) end)`, `"aa bb", 2`},
	{`string.gsub("abc", "b", true)`, `error: bad argument #3`},

	// %b
	{`("f(a(b)c) d"):match("%b()")`, `"(a(b)c)"`},
	{`("x(a"):match("%b()")`, `nil`}, // gopher-lua: no value
	{`("[[x]]"):match("%b[]")`, `"[[x]]"`},
	{`("'a'b'"):match("%b''")`, `"'a'"`},
	{`("(a)(b)"):gsub("%b()", "")`, `"", 2`},
	{`("if (a) then (b) end"):gsub("%b()", "X")`, `"if X then X end", 2`},
	{`("a"):find("%b")`, `error: unbalanced pattern`},  // gopher-lua: nil
	{`("a"):find("%ba")`, `error: unbalanced pattern`}, // gopher-lua: nil

	// %f
	{`("THE (quick) fox"):gsub("%f[%a]%a+", "W")`, `"W (W) W", 3`},    // gopher-lua: "THE (quick) W", 1
	{`("hello world"):find("%f[%w]%w+", 2)`, `7, 11`},                 // gopher-lua: nil
	{`("foo"):find("%f[%a]")`, `1, 0`},                                // gopher-lua: 1, 2
	{`("foo"):find("%f[%z]")`, `4, 3`},                                // gopher-lua: nil
	{`("foo bar"):gsub("%f[%a]", "|")`, `"|foo |bar", 2`},             // gopher-lua: "|o bar", 1
	{`("foo bar"):gsub("%f[%A]", "|")`, `"foo| bar|", 2`},             // gopher-lua: "foo bar", 0
	{`("a"):find("%f")`, `error: missing '[' after '%f' in pattern`},  // gopher-lua: nil
	{`("a"):find("%fa")`, `error: missing '[' after '%f' in pattern`}, // gopher-lua: nil
	{`("a"):find("%f[a")`, `error: malformed pattern (missing ']')`},  // gopher-lua: "unexpected EOS at 3"

	// back-references
	{`('say "hi" now'):match("([\"'])(.-)%1")`, `"\"", "hi"`},
	{`("abcabc"):find("(abc)%1")`, `1, 6, "abc"`},
	{`("abab"):match("(a)(b)%1%2")`, `"a", "b"`},
	{`("xx"):find("(x*)%1")`, `1, 2, "x"`},
	{`("ab"):match("()a%1")`, `nil`}, // gopher-lua: 1
	{`("aa"):match("(a)%2")`, `error: invalid capture index`},
	{`("aa"):match("(a%1)")`, `error: invalid capture index`},
	{`("aa"):match("%0")`, `error: invalid capture index`},

	// captures
	{`("a"):match("(a")`, `error: unfinished capture`},
	{`("a"):find("(a")`, `error: unfinished capture`},
	{`("b"):match("(a")`, `nil`},                            // gopher-lua: "unfinished capture at EOS"
	{`("a"):match("a)")`, `error: invalid pattern capture`}, // gopher-lua: "invalid ')' at 0"
	{`("a"):match(")")`, `error: invalid pattern capture`},  // gopher-lua: "invalid ')' at 0"
	{`("a"):match("((a)")`, `error: unfinished capture`},
	{`("a"):match("(()")`, `error: unfinished capture`},
	{`("a"):match("()")`, `1`},
	{`("a"):gsub("a", "%1")`, `"a", 1`},
	{`select("#", ("a"):rep(32):match(("(a)"):rep(32)))`, `32`},
	{`("a"):rep(33):match(("(a)"):rep(33))`, `error: too many captures`}, // gopher-lua: 33 captures

	// the string metatable indexes the same functions
	{`("x").gmatch == string.gmatch and ("x").gsub == string.gsub`, `true`},
	{`("").find == string.find`, `true`},
}

// patternHelpers precedes every case: list(gmatch(...)) joins what each step returned.
const patternHelpers = `local function list(...)
  local out = {}
  for a, b in ... do out[#out + 1] = b and (tostring(a) .. "|" .. tostring(b)) or tostring(a) end
  return table.concat(out, ",")
end
`

var luaChunkPrefix = regexp.MustCompile(`^<string>:\d+: `)

// evalLua runs "return expr" in L and formats the results (or the error) as patternCases do.
func evalLua(L *lua.LState, expr string) string {
	fn, err := L.LoadString(patternHelpers + "return " + expr)
	if err != nil {
		return "load error: " + err.Error()
	}
	top := L.GetTop()
	L.Push(fn)
	if err := L.PCall(0, lua.MultRet, nil); err != nil {
		var apiErr *lua.ApiError
		if errors.As(err, &apiErr) {
			if apiErr.Type != lua.ApiErrorRun {
				return "go panic: " + apiErr.Error()
			}
			return "error: " + luaChunkPrefix.ReplaceAllString(apiErr.Object.String(), "")
		}
		return "error: " + err.Error()
	}
	var parts []string
	for i := top + 1; i <= L.GetTop(); i++ {
		parts = append(parts, formatLua(L.Get(i)))
	}
	L.SetTop(top)
	return strings.Join(parts, ", ")
}

func formatLua(v lua.LValue) string {
	if s, ok := v.(lua.LString); ok {
		return strconv.Quote(string(s))
	}
	return v.String()
}

// resultIs compares evalLua's result with a wanted one; an error message need only begin
// with the wanted text.
func resultIs(got, want string) bool {
	if strings.HasPrefix(want, "error: ") {
		return strings.HasPrefix(got, want)
	}
	return got == want
}

func TestPatternCases(t *testing.T) {
	L := newPatternState(t)
	for _, c := range patternCases {
		if got := evalLua(L, c.expr); !resultIs(got, c.want) {
			t.Errorf("%s = %s, want %s", c.expr, got, c.want)
		}
	}
}

// patternDifferences are where StoatFlow's patterns differ from Lua 5.1 (docs/lua.md,
// Sandbox): what they return here, and what Lua 5.1 returns.
var patternDifferences = []struct{ expr, want, lua51 string }{
	// Recursion is bounded: 199 a* items still match, 200 do not.
	{`(""):match(("a*"):rep(199))`, `""`, `""`},
	{`(""):match(("a*"):rep(200))`, `error: pattern too complex`, `""`},
	{`("a"):rep(300):match(("a?"):rep(300))`, `error: pattern too complex`, strconv.Quote(strings.Repeat("a", 300))},
	// A zero byte in a pattern is an ordinary byte.
	{`("a\0b"):find(".\0b")`, `1, 3`, `1, 1`},
	// Numeric arguments must be numbers.
	{`("abc"):find("b", "2")`, `error: bad argument #3`, `2, 2`},
}

func TestPatternDifferencesFromLua51(t *testing.T) {
	L := newPatternState(t)
	for _, c := range patternDifferences {
		if got := evalLua(L, c.expr); !resultIs(got, c.want) {
			t.Errorf("%s = %s, want %s", c.expr, got, c.want)
		}
	}
}

// Trying a position allocates nothing: find, match, gmatch and gsub over a long subject
// allocate what they do over a short one. And gmatch is lazy: taking its first match of
// many costs what taking the only one does.
func TestPatternAllocationsDoNotGrowWithSubject(t *testing.T) {
	L := newPatternState(t)
	for _, c := range []struct {
		name, fn    string
		short, long string
	}{
		{"no match", `return function(s)
  for w in s:gmatch("%a+") do end
  local i = s:find("%a%d")
  local m = s:match("(%a+)x")
  local r, k = s:gsub("%s%a", "")
end`, "word 0123", "word " + strings.Repeat("0123456789-", 100)},
		{"first of many", `return function(s) local w = s:gmatch("%a+")() end`, "w", strings.Repeat("w ", 500)},
	} {
		if err := L.DoString(c.fn); err != nil {
			t.Fatal(err)
		}
		fn := L.Get(-1)
		L.Pop(1)
		allocs := func(s lua.LValue) float64 {
			return testing.AllocsPerRun(50, func() {
				L.Push(fn)
				L.Push(s)
				if err := L.PCall(1, 0, nil); err != nil {
					t.Fatal(err)
				}
			})
		}
		if short, long := allocs(lua.LString(c.short)), allocs(lua.LString(c.long)); long != short {
			t.Errorf("%s: %v allocations for a %d-byte subject, %v for %q", c.name, long, len(c.long), short, c.short)
		}
	}
}

// A gmatch iterator that matches nothing costs two allocations: its state with its Lua
// function, and the Go closure over the state.
func TestGmatchIteratorAllocatesTwice(t *testing.T) {
	L := newPatternState(t)
	gmatch := L.GetField(L.GetGlobal("string"), "gmatch")
	src, pat := lua.LValue(lua.LString("0123 4567")), lua.LValue(lua.LString("%a+"))
	allocs := testing.AllocsPerRun(100, func() {
		if err := L.CallByParam(lua.P{Fn: gmatch, NRet: 1, Protect: true}, src, pat); err != nil {
			t.Fatal(err)
		}
		if err := L.CallByParam(lua.P{Fn: L.Get(-1), NRet: 1, Protect: true}); err != nil {
			t.Fatal(err)
		}
		if L.Get(-1) != lua.LNil {
			t.Fatalf("the iterator matched %v", L.Get(-1))
		}
		L.Pop(2)
	})
	if allocs != 2 {
		t.Fatalf("%v allocations, want 2", allocs)
	}
}

// gsub tells its allocator how its result's buffer grows before it grows, in a few parts
// (the buffer doubles), and so the whole capacity by the end; an allocator that raises
// stops it.
func TestGsubTellsItsAllocatorHowItsResultGrows(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	var parts []int64
	var told, total int64
	Open(L, L.GetGlobal("string").(*lua.LTable), func(L *lua.LState, what string, n, sum int64) {
		if what != "string.gsub" {
			t.Errorf("allocation for %q", what)
		}
		if told += n; told != sum {
			t.Errorf("told %d bytes in parts, %d in all", told, sum)
		}
		parts, total = append(parts, n), sum
		if sum > 1<<20 {
			L.RaiseError("too large")
		}
	})
	if err := L.DoString(`r = string.rep("x", 100000):gsub("x", "yy")`); err != nil {
		t.Fatal(err)
	}
	if total < 200000 || total > 4*200000 || len(parts) > 4 {
		t.Fatalf("told %v (%d bytes), want a few parts of at least 200000 bytes in all and at most 4 times that", parts, total)
	}
	told = 0
	if err := L.DoString(`r = string.rep("x", 1000000):gsub("x", "yy")`); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("err = %v, want the allocator's error", err)
	}
}
