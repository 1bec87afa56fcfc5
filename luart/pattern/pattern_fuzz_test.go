package pattern

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/pm"
)

// newPatternState is a state with gopher-lua's libraries whose pattern functions are ours.
func newPatternState(t testing.TB) *lua.LState {
	L := lua.NewState()
	Open(L, L.GetGlobal("string").(*lua.LTable), func(*lua.LState, string, int64, int64) {})
	t.Cleanup(L.Close)
	return L
}

// callString calls string.<name>(args...) and returns its results. A Go panic inside the
// call (anything but a Lua error) fails the test.
func callString(t testing.TB, L *lua.LState, name string, args ...lua.LValue) ([]lua.LValue, error) {
	fn := L.GetField(L.GetGlobal("string"), name)
	return callLuaFn(t, L, fn, args...)
}

func callLuaFn(t testing.TB, L *lua.LState, fn lua.LValue, args ...lua.LValue) ([]lua.LValue, error) {
	top := L.GetTop()
	defer L.SetTop(top)
	L.Push(fn)
	for _, a := range args {
		L.Push(a)
	}
	if err := L.PCall(len(args), lua.MultRet, nil); err != nil {
		var apiErr *lua.ApiError
		if !errors.As(err, &apiErr) || apiErr.Type != lua.ApiErrorRun {
			t.Fatalf("string function panicked: %v", err)
		}
		return nil, err
	}
	out := make([]lua.LValue, 0, L.GetTop()-top)
	for i := top + 1; i <= L.GetTop(); i++ {
		out = append(out, L.Get(i))
	}
	return out, nil
}

// gmatchAll runs a gmatch loop to its end and returns each step's results.
func gmatchAll(t testing.TB, L *lua.LState, s, p string) ([][]lua.LValue, error) {
	res, err := callString(t, L, "gmatch", lua.LString(s), lua.LString(p))
	if err != nil {
		return nil, err
	}
	var steps [][]lua.LValue
	for range len(s) + 2 {
		vals, err := callLuaFn(t, L, res[0])
		if err != nil {
			return nil, err
		}
		if len(vals) == 0 || vals[0] == lua.LNil {
			return steps, nil
		}
		steps = append(steps, vals)
	}
	t.Fatalf("gmatch(%q, %q) gave more than %d matches", s, p, len(s)+1)
	return nil, nil
}

func sameValues(a, b []lua.LValue) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The pieces FuzzPatternVsGopherLua builds patterns from: constructs gopher-lua's pm
// matches as Lua 5.1 does (patternCases lists where it does not).
var (
	fuzzClasses     = []string{"a", "b", "c", " ", ".", "%a", "%d", "%s", "%A", "%.", "[ab]", "[^a]", "[a-c]", "[%d ]"}
	fuzzRepetitions = []string{"", "*", "+", "-", "?"}
	fuzzSubject     = "aabbc .1"
)

// fuzzPattern turns fuzz bytes into a pattern of at most 16 items with at most 4
// repetitions, so backtracking stays small for both matchers. The first byte adds '^'
// (bit 0) and '$' (bit 1); each other byte's low 3 bits are 0-4 for a class (its upper
// bits pick one) with that many fuzzRepetitions, 5 '(', 6 ')' and 7 "()".
func fuzzPattern(code []byte) string {
	var b strings.Builder
	if len(code) > 0 && code[0]&1 == 1 {
		b.WriteByte('^')
	}
	open, repeats := 0, 0
	for i := 1; i < len(code) && i < 16; i++ {
		switch op := code[i] % 8; {
		case op < 5:
			b.WriteString(fuzzClasses[int(code[i]/8)%len(fuzzClasses)])
			if op > 0 && repeats < 4 {
				b.WriteString(fuzzRepetitions[op])
				repeats++
			}
		case op == 5 && open < 3:
			b.WriteByte('(')
			open++
		case op == 6 && open > 0:
			b.WriteByte(')')
			open--
		case op == 7:
			b.WriteString("()")
		}
	}
	b.WriteString(strings.Repeat(")", open))
	if len(code) > 0 && code[0]&2 == 2 {
		b.WriteByte('$')
	}
	return b.String()
}

// pmValues are the Lua results of one pm match: with find, its start and end first; then
// the captures, or with none the whole match unless find.
func pmValues(md *pm.MatchData, s string, find bool) []lua.LValue {
	var out []lua.LValue
	if find {
		out = append(out, lua.LNumber(md.Capture(0)+1), lua.LNumber(md.Capture(1)))
	} else if md.CaptureLength() == 2 {
		out = append(out, lua.LString(s[md.Capture(0):md.Capture(1)]))
	}
	for i := 2; i < md.CaptureLength(); i += 2 {
		if md.IsPosCapture(i) {
			out = append(out, lua.LNumber(md.Capture(i)))
		} else {
			out = append(out, lua.LString(s[md.Capture(i):md.Capture(i+1)]))
		}
	}
	return out
}

// FuzzPatternVsGopherLua compares string.find and string.gmatch with gopher-lua's matcher on
// patterns made of the constructs both implement alike.
func FuzzPatternVsGopherLua(f *testing.F) {
	subject := []byte{0, 0, 0, 2, 2, 5, 4, 7, 6}           // "aaabb c1."
	f.Add(subject, []byte{0, 1}, uint8(0))                 // a*
	f.Add(subject, []byte{0, 5, 1, 6, 5, 0, 6}, uint8(0))  // (a*)(a)
	f.Add(subject, []byte{2, 42, 40}, uint8(0))            // %a+%a$
	f.Add(subject, []byte{1, 35, 8}, uint8(0))             // ^.-b
	f.Add(subject, []byte{0, 7, 99, 7}, uint8(0))          // ()[a-c]-()
	f.Add(subject, []byte{0, 66, 5, 84, 6}, uint8(3))      // %A+([ab]?)
	f.Add(subject, []byte{0, 5, 44, 6, 32, 106}, uint8(1)) // (%a?).[%d ]+
	f.Add(subject, []byte{0, 75, 8, 50}, uint8(0))         // %.-b%d+
	f.Add([]byte{}, []byte{3, 1}, uint8(0))                // ^a*$
	f.Add(subject, []byte{0, 42}, uint8(4))                // %a+
	L := newPatternState(f)
	f.Fuzz(func(t *testing.T, subjectCode, patternCode []byte, init uint8) {
		if len(subjectCode) > 32 {
			subjectCode = subjectCode[:32]
		}
		sb := make([]byte, len(subjectCode))
		for i, c := range subjectCode {
			sb[i] = fuzzSubject[int(c)%len(fuzzSubject)]
		}
		s := string(sb)
		p := fuzzPattern(patternCode)
		start := int(init) % (len(s) + 1)

		got, err := callString(t, L, "find", lua.LString(s), lua.LString(p), lua.LNumber(start+1))
		if err != nil {
			t.Fatalf("find(%q, %q, %d): %v", s, p, start+1, err)
		}
		mds, perr := pm.Find(p, []byte(s), start, 1)
		if perr != nil {
			t.Fatalf("pm.Find(%q, %q): %v", p, s, perr)
		}
		want := []lua.LValue{lua.LNil}
		if len(mds) > 0 {
			want = pmValues(mds[0], s, true)
		}
		if !sameValues(got, want) {
			t.Fatalf("find(%q, %q, %d) = %v, gopher-lua %v", s, p, start+1, got, want)
		}

		if strings.HasPrefix(p, "^") {
			return // gmatch reads '^' as a character, gopher-lua as an anchor
		}
		steps, err := gmatchAll(t, L, s, p)
		if err != nil {
			t.Fatalf("gmatch(%q, %q): %v", s, p, err)
		}
		all, _ := pm.Find(p, []byte(s), 0, -1)
		if len(steps) != len(all) {
			t.Fatalf("gmatch(%q, %q): %d matches, gopher-lua %d", s, p, len(steps), len(all))
		}
		for i, md := range all {
			if w := pmValues(md, s, false); !sameValues(steps[i], w) {
				t.Fatalf("gmatch(%q, %q) step %d = %v, gopher-lua %v", s, p, i+1, steps[i], w)
			}
		}
	})
}

// FuzzPatternProperties runs arbitrary patterns, malformed ones included, and checks what
// must hold whatever the pattern: no Go panic; a match found at i is the match anchored at
// i; and gsub with "%0" leaves the subject as it is and counts the matches gmatch yields.
func FuzzPatternProperties(f *testing.F) {
	f.Add("hello world", "o w", uint8(0))
	f.Add("hello world", "%w+", uint8(3))
	f.Add("key = value", "(%w+)%s*=%s*(%w+)", uint8(0))
	f.Add("f(a(b)c) d", "%b()", uint8(0))
	f.Add("THE (quick) fox", "%f[%a]%a+", uint8(0))
	f.Add(`say "hi" now`, `(["'])(.-)%1`, uint8(0))
	f.Add("abc", "", uint8(2))
	f.Add("abc", "b*", uint8(0))
	f.Add("a]b", "[]]", uint8(0))
	f.Add("x", "[a", uint8(0))
	f.Add("x", "a%", uint8(0))
	f.Add("a", "(a", uint8(0))
	f.Add("a", "a)", uint8(0))
	f.Add("a", "%f", uint8(0))
	f.Add("aa", "(a%1)", uint8(0))
	f.Add("a\x00b", "%z", uint8(0))
	f.Add("\xff\x80", "[\x80-\xff]+", uint8(0))
	f.Add("aaaa", "a-$", uint8(1))
	f.Add("aa", "()a%1", uint8(0))
	L := newPatternState(f)
	f.Fuzz(func(t *testing.T, s, p string, init uint8) {
		if len(s) > 256 || len(p) > 64 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		L.SetContext(ctx)
		defer L.RemoveContext()

		start := int(init)%(len(s)+2) + 1
		found, err := callString(t, L, "find", lua.LString(s), lua.LString(p), lua.LNumber(start))
		if err == nil && found[0] != lua.LNil && !strings.HasPrefix(p, "^") && strings.ContainsAny(p, patSpecials) {
			i, j := int(found[0].(lua.LNumber)), int(found[1].(lua.LNumber))
			if i < min(start, len(s)+1) || j < i-1 || j > len(s) {
				t.Fatalf("find(%q, %q, %d) = %v: out of range", s, p, start, found)
			}
			anchored, err := callString(t, L, "find", lua.LString(s), lua.LString("^"+p), lua.LNumber(i))
			if err != nil || !sameValues(anchored, found) {
				t.Fatalf("find(%q, %q, %d) = %v, but anchored at %d: %v, %v", s, p, start, found, i, anchored, err)
			}
		}

		if strings.HasPrefix(p, "^") {
			return // gsub anchors, gmatch does not
		}
		steps, err := gmatchAll(t, L, s, p)
		if err != nil {
			return
		}
		res, err := callString(t, L, "gsub", lua.LString(s), lua.LString(p), lua.LString("%0"))
		if err != nil || len(res) != 2 || res[0] != lua.LString(s) || res[1] != lua.LNumber(len(steps)) {
			t.Fatalf("gsub(%q, %q, \"%%0\") = %v, %v; gmatch gave %d matches", s, p, res, err, len(steps))
		}
	})
}
