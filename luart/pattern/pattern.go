// Package pattern gives a gopher-lua state Lua 5.1's string patterns: Open replaces
// string.find, match, gmatch and gsub. Its tests check their cases against lua5.1 where it
// is installed (and always in CI).
package pattern

import (
	"context"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1 string patterns (reference manual §5.4.1) for string.find, match, gmatch and gsub.
// gopher-lua's own matcher compiles the pattern on every call, allocates at every subject
// position and collects all gmatch results up front, which made it the largest cost of a
// word count; this one walks the pattern text while it backtracks over the subject bytes,
// as Lua's string library does, and allocates only the values it returns to Lua.
//
// Like Lua's, it reports a malformed pattern only when matching reaches the faulty part.

const (
	// patMaxCaptures is Lua's LUA_MAXCAPTURES.
	patMaxCaptures = 32
	// patMaxDepth bounds the matcher's recursion as Lua 5.2's MAXCCALLS does, so a hostile
	// pattern fails with "pattern too complex" instead of growing the Go stack.
	patMaxDepth = 200
	// patCheckEvery is how many matching steps pass between looks at the call's context, so
	// the time budget can stop one long find or gsub.
	patCheckEvery = 1024
	// gsubSlack is how many bytes more than the rest of its subject a gsub result makes room
	// for each time it grows (telling the memory budget first).
	gsubSlack = 64
	// patSpecials are the characters that make string.find use the pattern matcher.
	patSpecials = "^$*+?.([%-"

	capUnfinished = -1
	capPosition   = -2
)

// patError is a pattern error; the Lua functions raise it as a Lua error at the caller's line.
type patError string

type patCapture struct{ init, len int }

// The character classes of the C locale, one bit each.
const (
	clAlpha uint16 = 1 << iota
	clCntrl
	clDigit
	clLower
	clPunct
	clSpace
	clUpper
	clAlnum
	clXdigit
	clZero
	clNegated // in classOfLetter: the upper-case letter, the complement
)

var (
	// charClasses holds the classes each byte belongs to.
	charClasses [256]uint16
	// classOfLetter maps the letter after % to its class; 0 for a letter that is no class.
	classOfLetter [256]uint16
)

func init() {
	for c := range 256 {
		var bits uint16
		switch {
		case c >= 'a' && c <= 'z':
			bits = clAlpha | clLower | clAlnum
		case c >= 'A' && c <= 'Z':
			bits = clAlpha | clUpper | clAlnum
		case c >= '0' && c <= '9':
			bits = clDigit | clAlnum | clXdigit
		case c == ' ' || c >= '\t' && c <= '\r':
			bits = clSpace | clCntrl
		case c < ' ' || c == 0x7f:
			bits = clCntrl
		case c < 0x7f:
			bits = clPunct
		}
		if c == ' ' {
			bits &^= clCntrl
		}
		if c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' {
			bits |= clXdigit
		}
		if c == 0 {
			bits |= clZero
		}
		charClasses[c] = bits
	}
	for letter, class := range map[byte]uint16{
		'a': clAlpha, 'c': clCntrl, 'd': clDigit, 'l': clLower, 'p': clPunct,
		's': clSpace, 'u': clUpper, 'w': clAlnum, 'x': clXdigit, 'z': clZero,
	} {
		classOfLetter[letter] = class
		classOfLetter[letter-'a'+'A'] = class | clNegated
	}
}

// classMatch reports whether c is in the class %cl; a %cl that names no class is cl itself.
func classMatch(c, cl byte) bool {
	class := classOfLetter[cl]
	if class == 0 {
		return c == cl
	}
	return (charClasses[c]&class != 0) != (class&clNegated != 0)
}

// matcher is the state of one matching call: the subject, the pattern, the captures of the
// attempt in progress and the countdown to the next look at the context.
type matcher struct {
	src, pat string
	level    int // captures opened so far
	depth    int // recursion left
	steps    int
	ctx      context.Context
	// start is where matching begins in pat (after an anchoring '^'); when first is true,
	// pat[start:firstEnd] is a single-character class every match must begin with.
	start, firstEnd int
	first           bool
	caps            [patMaxCaptures]patCapture
}

// init prepares m for matching pat against src from pat[start:]; start is 1 after an
// anchoring '^', else 0.
func (m *matcher) init(src, pat string, start int) {
	m.src, m.pat, m.start = src, pat, start
	m.firstEnd, m.first = m.firstItem(start)
}

// begin starts a Lua call under the budget ctx of the calling state.
func (m *matcher) begin(ctx context.Context) {
	m.steps = patCheckEvery
	m.ctx = ctx
}

// firstItem finds a single-character class at p that a match has to begin with (it is not
// optional), so positions whose byte is not in it can be skipped without an attempt. It
// reports false for anything else, malformed classes included: those fail in the attempt.
func (m *matcher) firstItem(p int) (int, bool) {
	pat := m.pat
	if p >= len(pat) {
		return 0, false
	}
	switch pat[p] {
	case '(', ')':
		return 0, false
	case '$':
		if p+1 == len(pat) {
			return 0, false
		}
	case '%':
		if p+1 < len(pat) {
			switch c := pat[p+1]; {
			case c == 'b', c == 'f', c >= '0' && c <= '9':
				return 0, false
			}
		}
	}
	ep, err := m.itemEnd(p)
	if err != "" || ep < len(pat) && (pat[ep] == '*' || pat[ep] == '?' || pat[ep] == '-') {
		return 0, false
	}
	return ep, true
}

// attempt matches the pattern at subject position s and returns the end of the match, or -1.
func (m *matcher) attempt(s int) int {
	if m.first && (s >= len(m.src) || !m.singleMatch(m.src[s], m.start, m.firstEnd)) {
		m.tick(1)
		return -1
	}
	m.level = 0
	m.depth = patMaxDepth
	return m.match(s, m.start)
}

// skip returns the first position from s on where a match may begin (for an unanchored
// pattern), or len(src)+1 when there is none.
func (m *matcher) skip(s int) int {
	if !m.first {
		return s
	}
	src, p := m.src, m.start
	if s >= len(src) {
		return len(src) + 1 // the first item needs a byte
	}
	from := s
	switch c := m.pat[p]; c {
	case '%':
		if class := classOfLetter[m.pat[p+1]]; class != 0 {
			// The word count's %a+ lands here: a table lookup per byte.
			in := class&clNegated == 0
			for s < len(src) && (charClasses[src[s]]&class != 0) != in {
				s++
			}
			break
		}
		fallthrough
	case '[', '.':
		for s < len(src) && !m.singleMatch(src[s], p, m.firstEnd) {
			s++
		}
	default:
		if i := strings.IndexByte(src[s:], c); i >= 0 {
			s += i
		} else {
			s = len(src)
		}
	}
	m.tick(s - from)
	if s == len(src) {
		return s + 1
	}
	return s
}

// tick counts n steps of work and stops the call once its context is done.
func (m *matcher) tick(n int) {
	m.steps -= n
	if m.steps >= 0 {
		return
	}
	m.steps = patCheckEvery
	if m.ctx == nil {
		return
	}
	// Done is asked each time: the budget's changes when it stops the call.
	select {
	case <-m.ctx.Done():
		panic(patError(m.ctx.Err().Error()))
	default:
	}
}

// classEnd returns the end of the single-character class starting at p.
func (m *matcher) classEnd(p int) int {
	ep, err := m.itemEnd(p)
	if err != "" {
		panic(err)
	}
	return ep
}

// itemEnd is classEnd, reporting a malformed class instead of raising it.
func (m *matcher) itemEnd(p int) (int, patError) {
	pat := m.pat
	c := pat[p]
	p++
	switch c {
	case '%':
		if p >= len(pat) {
			return 0, "malformed pattern (ends with '%')"
		}
		return p + 1, ""
	case '[':
		if p < len(pat) && pat[p] == '^' {
			p++
		}
		// The first character is a member even when it is ']'; an escape can hide one.
		for {
			if p >= len(pat) {
				return 0, "malformed pattern (missing ']')"
			}
			c := pat[p]
			p++
			if c == '%' && p < len(pat) {
				p++
			}
			if p < len(pat) && pat[p] == ']' {
				return p + 1, ""
			}
		}
	}
	return p, ""
}

// singleMatch reports whether c is in the class pat[p:ep].
func (m *matcher) singleMatch(c byte, p, ep int) bool {
	switch m.pat[p] {
	case '.':
		return true
	case '%':
		return classMatch(c, m.pat[p+1])
	case '[':
		return m.setMatch(c, p, ep-1)
	}
	return m.pat[p] == c
}

// setMatch reports whether c is in the set pat[p:ec+1], p at its '[' and ec at its ']'.
func (m *matcher) setMatch(c byte, p, ec int) bool {
	pat := m.pat
	in := true
	p++
	if pat[p] == '^' {
		in = false
		p++
	}
	for ; p < ec; p++ {
		switch {
		case pat[p] == '%':
			p++
			if classMatch(c, pat[p]) {
				return in
			}
		case pat[p+1] == '-' && p+2 < ec:
			if pat[p] <= c && c <= pat[p+2] {
				return in
			}
			p += 2
		case pat[p] == c:
			return in
		}
	}
	return !in
}

// match matches pat[p:] at src[s:] and returns the end of the match, or -1.
func (m *matcher) match(s, p int) int {
	if m.depth == 0 {
		panic(patError("pattern too complex"))
	}
	m.depth--
	m.tick(1)
	e := m.matchItems(s, p)
	m.depth++
	return e
}

func (m *matcher) matchItems(s, p int) int {
	src, pat := m.src, m.pat
	for {
		if p == len(pat) {
			return s
		}
		switch pat[p] {
		case '(':
			if p+1 < len(pat) && pat[p+1] == ')' {
				return m.startCapture(s, p+2, capPosition)
			}
			return m.startCapture(s, p+1, capUnfinished)
		case ')':
			return m.endCapture(s, p+1)
		case '$':
			if p+1 == len(pat) {
				if s == len(src) {
					return s
				}
				return -1
			}
		case '%':
			if p+1 == len(pat) {
				break
			}
			switch c := pat[p+1]; {
			case c == 'b':
				if s = m.matchBalance(s, p+2); s < 0 {
					return -1
				}
				p += 4
				continue
			case c == 'f':
				p += 2
				if p >= len(pat) || pat[p] != '[' {
					panic(patError("missing '[' after '%f' in pattern"))
				}
				ep := m.classEnd(p)
				// Before the subject and after it the frontier sees '\0', as in C.
				var prev, next byte
				if s > 0 {
					prev = src[s-1]
				}
				if s < len(src) {
					next = src[s]
				}
				if m.setMatch(prev, p, ep-1) || !m.setMatch(next, p, ep-1) {
					return -1
				}
				p = ep
				continue
			case c >= '0' && c <= '9':
				if s = m.matchCapture(s, c); s < 0 {
					return -1
				}
				p += 2
				continue
			}
		}
		ep := m.classEnd(p)
		matched := s < len(src) && m.singleMatch(src[s], p, ep)
		if ep < len(pat) {
			switch pat[ep] {
			case '?':
				if matched {
					if e := m.match(s+1, ep+1); e >= 0 {
						return e
					}
				}
				p = ep + 1
				continue
			case '*':
				return m.maxExpand(s, p, ep)
			case '+':
				if !matched {
					return -1
				}
				return m.maxExpand(s+1, p, ep)
			case '-':
				return m.minExpand(s, p, ep)
			}
		}
		if !matched {
			return -1
		}
		s++
		p = ep
	}
}

// maxExpand matches the longest run of pat[p:ep] at s for which the rest still matches.
func (m *matcher) maxExpand(s, p, ep int) int {
	n := 0
	for s+n < len(m.src) && m.singleMatch(m.src[s+n], p, ep) {
		n++
	}
	m.tick(n)
	for ; n >= 0; n-- {
		if e := m.match(s+n, ep+1); e >= 0 {
			return e
		}
	}
	return -1
}

// minExpand matches the shortest run of pat[p:ep] at s for which the rest matches.
func (m *matcher) minExpand(s, p, ep int) int {
	for {
		if e := m.match(s, ep+1); e >= 0 {
			return e
		}
		if s < len(m.src) && m.singleMatch(m.src[s], p, ep) {
			s++
		} else {
			return -1
		}
	}
}

func (m *matcher) startCapture(s, p, what int) int {
	if m.level >= patMaxCaptures {
		panic(patError("too many captures"))
	}
	m.caps[m.level] = patCapture{init: s, len: what}
	m.level++
	e := m.match(s, p)
	if e < 0 {
		m.level--
	}
	return e
}

func (m *matcher) endCapture(s, p int) int {
	l := m.captureToClose()
	m.caps[l].len = s - m.caps[l].init
	e := m.match(s, p)
	if e < 0 {
		m.caps[l].len = capUnfinished
	}
	return e
}

func (m *matcher) captureToClose() int {
	for l := m.level - 1; l >= 0; l-- {
		if m.caps[l].len == capUnfinished {
			return l
		}
	}
	panic(patError("invalid pattern capture"))
}

// matchBalance matches %bxy (x and y at pat[p], pat[p+1]) at s.
func (m *matcher) matchBalance(s, p int) int {
	if p+1 >= len(m.pat) {
		panic(patError("unbalanced pattern"))
	}
	src := m.src
	if s >= len(src) || src[s] != m.pat[p] {
		return -1
	}
	open, closing := m.pat[p], m.pat[p+1]
	depth := 1
	for i := s + 1; i < len(src); i++ {
		// The closing byte is tested first, so %bxx matches from one x to the next.
		switch src[i] {
		case closing:
			if depth--; depth == 0 {
				m.tick(i - s)
				return i + 1
			}
		case open:
			depth++
		}
	}
	m.tick(len(src) - s)
	return -1
}

// matchCapture matches the back-reference %d at s. A position capture matches nothing.
func (m *matcher) matchCapture(s int, d byte) int {
	l := int(d) - '1'
	if l < 0 || l >= m.level || m.caps[l].len == capUnfinished {
		panic(patError("invalid capture index"))
	}
	c := m.caps[l]
	if c.len == capPosition || len(m.src)-s < c.len || m.src[c.init:c.init+c.len] != m.src[s:s+c.len] {
		return -1
	}
	m.tick(c.len)
	return s + c.len
}

// captureAt returns capture i of the match src[s:e]: its text, or for a position capture
// the position (1-based, so never 0). With no captures, capture 0 is the whole match.
func (m *matcher) captureAt(i, s, e int) (string, int) {
	if i >= m.level {
		if i != 0 {
			panic(patError("invalid capture index"))
		}
		return m.src[s:e], 0
	}
	switch c := m.caps[i]; c.len {
	case capUnfinished:
		panic(patError("unfinished capture"))
	case capPosition:
		return "", c.init + 1
	default:
		return m.src[c.init : c.init+c.len], 0
	}
}

// capture is captureAt as a Lua value.
func (m *matcher) capture(i, s, e int) lua.LValue {
	text, pos := m.captureAt(i, s, e)
	if pos > 0 {
		return lua.LNumber(pos)
	}
	return lua.LString(text)
}

// pushCaptures pushes the captures of the match src[s:e], or the whole match when there are
// none and whole is set, and returns how many it pushed.
func (m *matcher) pushCaptures(L *lua.LState, s, e int, whole bool) int {
	n := m.level
	if n == 0 && whole {
		n = 1
	}
	for i := range n {
		L.Push(m.capture(i, s, e))
	}
	return n
}

// raisePatternError turns a pattern error panicking out of the matcher into a Lua error at
// the calling line; other panics (a Lua error in a gsub function) go on unchanged.
func raisePatternError(L *lua.LState) {
	if r := recover(); r != nil {
		if e, ok := r.(patError); ok {
			L.RaiseError("%s", string(e))
		}
		panic(r)
	}
}

// Allocate is told that a library function (what) builds n more bytes of a value, total in
// all; a memory budget raises a Lua error from it to stop the call.
type Allocate func(L *lua.LState, what string, n, total int64)

// Open replaces the pattern functions of the string table (which is also the string
// values' __index) with those built on matcher; gsub tells allocate how its result grows.
func Open(L *lua.LState, str *lua.LTable, allocate Allocate) {
	str.RawSetString("find", L.NewFunction(strFind))
	str.RawSetString("match", L.NewFunction(strMatch))
	str.RawSetString("gmatch", L.NewFunction(strGmatch))
	str.RawSetString("gsub", L.NewFunction(func(L *lua.LState) int { return strGsub(L, allocate) }))
}

func strFind(L *lua.LState) int  { return findAux(L, true) }
func strMatch(L *lua.LState) int { return findAux(L, false) }

// initIndex turns a Lua init argument (1-based, negative from the end) into a byte offset
// within src, as Lua 5.1 clamps it.
func initIndex(init, n int) int {
	if init < 0 {
		init = max(init+n+1, 0)
	}
	return min(max(init-1, 0), n)
}

func anchored(pat string) int {
	if len(pat) > 0 && pat[0] == '^' {
		return 1
	}
	return 0
}

// findAux is string.find (find) and string.match.
func findAux(L *lua.LState, find bool) int {
	src := L.CheckString(1)
	pat := L.CheckString(2)
	init := initIndex(L.OptInt(3, 1), len(src))
	if find && (L.ToBool(4) || !strings.ContainsAny(pat, patSpecials)) {
		i := strings.Index(src[init:], pat)
		if i < 0 {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(lua.LNumber(init + i + 1))
		L.Push(lua.LNumber(init + i + len(pat)))
		return 2
	}
	defer raisePatternError(L)
	var m matcher
	start := anchored(pat)
	m.init(src, pat, start)
	m.begin(L.Context())
	for s := init; s <= len(src); s++ {
		if start == 0 {
			if s = m.skip(s); s > len(src) {
				break
			}
		}
		if e := m.attempt(s); e >= 0 {
			if find {
				L.Push(lua.LNumber(s + 1))
				L.Push(lua.LNumber(e))
				return 2 + m.pushCaptures(L, s, e, false)
			}
			return m.pushCaptures(L, s, e, true)
		}
		if start == 1 {
			break
		}
	}
	L.Push(lua.LNil)
	return 1
}

// gmatchIter is the state of one string.gmatch iterator. A '^' is an ordinary character in
// gmatch patterns, as in Lua 5.1. It holds the iterator's Lua function too, so that a gmatch
// call allocates the two together: a loop over a record's words makes one per record.
type gmatchIter struct {
	fn       lua.LFunction
	src, pat string
	pos      int
}

func strGmatch(L *lua.LState) int {
	it := &gmatchIter{src: L.CheckString(1), pat: L.CheckString(2)}
	// What L.NewFunction makes: a Go function in the state's environment, no upvalues.
	it.fn = lua.LFunction{IsG: true, Env: L.Env, GFunction: it.next, Upvalues: []*lua.Upvalue{}}
	L.Push(&it.fn)
	return 1
}

func (it *gmatchIter) next(L *lua.LState) int {
	defer raisePatternError(L)
	var m matcher
	m.init(it.src, it.pat, 0)
	m.begin(L.Context())
	for s := m.skip(it.pos); s <= len(it.src); s = m.skip(s + 1) {
		if e := m.attempt(s); e >= 0 {
			it.pos = e
			if e == s {
				it.pos++ // an empty match: go on at the next position
			}
			return m.pushCaptures(L, s, e, true)
		}
	}
	it.pos = len(it.src) + 1
	return 0
}

func strGsub(L *lua.LState, allocateMore Allocate) int {
	src := L.CheckString(1)
	pat := L.CheckString(2)
	repl := L.Get(3)
	switch repl.(type) {
	case lua.LString, lua.LNumber, *lua.LTable, *lua.LFunction:
	default:
		L.ArgError(3, "string/function/table expected")
	}
	maxN := L.OptInt(4, len(src)+1)
	defer raisePatternError(L)
	var m matcher
	start := anchored(pat)
	m.init(src, pat, start)
	m.begin(L.Context())
	// The budget is told out's capacity before out grows to it: a strings.Builder doubles
	// as it grows, so a result told by its length after the fact could hold twice the
	// budget, and the buffers it outgrew as much again until they are collected. So a
	// result is refused once its next capacity would pass the budget, at between half the
	// budget and all of it.
	var out strings.Builder
	copied, n := 0, 0 // src[:copied] is in out (or unchanged, while n is 0)
	told := 0         // bytes of out's capacity told to the memory budget
	for s := 0; n < maxN; {
		if start == 0 {
			if s = m.skip(s); s > len(src) {
				break
			}
		}
		e := m.attempt(s)
		if e >= 0 {
			n++
			// Room for the rest of src and gsubSlack bytes more, so that results grow here,
			// geometrically, and seldom in the writes below.
			if need := len(src) - copied + gsubSlack; out.Cap()-out.Len() < need {
				// What strings.Builder.Grow allocates, told before it does.
				c := 2*out.Cap() + need
				allocateMore(L, "string.gsub", int64(c-told), int64(c))
				told = c
				out.Grow(need)
			}
			out.WriteString(src[copied:s])
			m.addReplacement(L, &out, repl, s, e)
			copied = e
			told = tellGrown(L, allocateMore, &out, told)
		}
		if e > s {
			s = e
		} else if s < len(src) {
			s++
		} else {
			break
		}
		if start == 1 {
			break
		}
	}
	if n == 0 {
		L.Push(lua.LString(src))
	} else {
		out.WriteString(src[copied:])
		tellGrown(L, allocateMore, &out, told)
		L.Push(lua.LString(out.String()))
	}
	L.Push(lua.LNumber(n))
	return 2
}

// tellGrown tells the budget how far out grew on its own past the told capacity, as it
// does when a replacement is longer than the room made for it, and returns the capacity
// told now.
func tellGrown(L *lua.LState, allocateMore Allocate, out *strings.Builder, told int) int {
	if grown := out.Cap() - told; grown > 0 {
		allocateMore(L, "string.gsub", int64(grown), int64(out.Cap()))
		return out.Cap()
	}
	return told
}

// addReplacement writes the replacement of the match src[s:e] to out.
func (m *matcher) addReplacement(L *lua.LState, out *strings.Builder, repl lua.LValue, s, e int) {
	var v lua.LValue
	switch r := repl.(type) {
	case lua.LString:
		m.expand(out, string(r), s, e)
		return
	case lua.LNumber:
		m.expand(out, r.String(), s, e)
		return
	case *lua.LTable:
		v = L.GetTable(r, m.capture(0, s, e))
	case *lua.LFunction:
		L.Push(r)
		L.Call(m.pushCaptures(L, s, e, true), 1)
		v = L.Get(-1)
		L.Pop(1)
	}
	switch r := v.(type) {
	case lua.LString:
		out.WriteString(string(r))
	case lua.LNumber:
		out.WriteString(r.String())
	default:
		if lua.LVAsBool(v) {
			panic(patError("invalid replacement value (a " + v.Type().String() + ")"))
		}
		out.WriteString(m.src[s:e]) // nil or false keeps the match
	}
}

// expand writes the replacement string repl for the match src[s:e]: %0 is the match, %1-%9
// its captures, and % before any other character stands for that character. A '%' ending
// repl writes a zero byte, as Lua 5.1 reads the string's terminator there.
func (m *matcher) expand(out *strings.Builder, repl string, s, e int) {
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		if c != '%' {
			out.WriteByte(c)
			continue
		}
		i++
		switch {
		case i == len(repl):
			out.WriteByte(0)
		case repl[i] == '0':
			out.WriteString(m.src[s:e])
		case repl[i] >= '1' && repl[i] <= '9':
			m.writeCapture(out, int(repl[i]-'1'), s, e)
		default:
			out.WriteByte(repl[i])
		}
	}
}

func (m *matcher) writeCapture(out *strings.Builder, i, s, e int) {
	text, pos := m.captureAt(i, s, e)
	if pos > 0 {
		text = strconv.Itoa(pos)
	}
	out.WriteString(text)
}
