package luart

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/pm"
)

// testFailure is why a test stopped: a failed assertion (raised as a userdata error value,
// so the runner can tell it from a Lua error and keep its diff), or any other error.
type testFailure struct {
	where   string // file:line of the failed assertion; empty when message carries its own
	message string
	diff    []string // "-expected" / "+actual" / " common" lines
}

// lines renders the failure as go test does: location and message, then the diff.
func (f *testFailure) lines() []string {
	head := f.message
	if f.where != "" {
		head = f.where + ": " + f.message
	}
	out := strings.Split(head, "\n")
	for _, d := range f.diff {
		out = append(out, "    "+d)
	}
	return out
}

func (f *testFailure) String() string { return strings.Join(f.lines(), "\n") }

// callerWhere is the file:line of the Lua code that called the running Go function, skipping
// Go frames (an assertion passed to pcall is reported at the pcall line).
func callerWhere(L *lua.LState) string {
	for level := 1; ; level++ {
		w := L.Where(level)
		if w == "" {
			return ""
		}
		if !strings.HasPrefix(w, "[G]") {
			return strings.TrimSuffix(w, ":")
		}
	}
}

// fail stops the running test with a failure located at the assertion's caller.
func (tf *testFile) fail(L *lua.LState, f *testFailure) {
	f.where = callerWhere(L)
	ud := L.NewUserData()
	ud.Value = f
	L.SetMetatable(ud, tf.failureMT)
	L.Error(ud, 0)
}

// withMessage prefixes the optional message argument at index i to what failed.
func withMessage(L *lua.LState, i int, what string) string {
	if msg := L.Get(i); msg != lua.LNil {
		return L.ToStringMeta(msg).String() + ": " + what
	}
	return what
}

func (tf *testFile) assertionFunctions() map[string]lua.LGFunction {
	return map[string]lua.LGFunction{
		"assertEquals": tf.assertEquals,
		"assertTrue":   tf.assertBool(true),
		"assertFalse":  tf.assertBool(false),
		"assertNil":    tf.assertNil(true),
		"assertNotNil": tf.assertNil(false),
		"assertError":  tf.assertError,
		"fail": func(L *lua.LState) int {
			msg := "failed"
			if L.Get(1) != lua.LNil {
				msg = L.ToStringMeta(L.Get(1)).String()
			}
			tf.fail(L, &testFailure{message: msg})
			return 0
		},
	}
}

// assertEquals(actual, expected [, message]) compares deeply and shows a line diff of the
// two values rendered as Lua literals.
func (tf *testFile) assertEquals(L *lua.LState) int {
	if L.GetTop() < 2 {
		L.RaiseError("assertEquals needs (actual, expected [, message])")
	}
	actual, expected := L.Get(1), L.Get(2)
	if tf.rt.deepEqual(actual, expected, 0) {
		return 0
	}
	tf.fail(L, &testFailure{
		message: withMessage(L, 3, "assertEquals: values differ (-expected +actual)"),
		diff:    lineDiff(tf.rt.render(expected), tf.rt.render(actual)),
	})
	return 0
}

// assertBool is strict: assertTrue(v) passes only for the boolean true, so that a forgotten
// call (t.assertTrue(out.isEmpty)) fails instead of passing on a truthy function.
func (tf *testFile) assertBool(want bool) lua.LGFunction {
	return func(L *lua.LState) int {
		v := L.Get(1)
		if b, ok := v.(lua.LBool); ok && bool(b) == want {
			return 0
		}
		name := "assertFalse"
		if want {
			name = "assertTrue"
		}
		tf.fail(L, &testFailure{message: withMessage(L, 2, name+": got "+tf.rt.render(v))})
		return 0
	}
}

// assertNil(v) passes only for nil; stoat.null is a value (compare it with assertEquals).
func (tf *testFile) assertNil(want bool) lua.LGFunction {
	return func(L *lua.LState) int {
		v := L.Get(1)
		if (v == lua.LNil) == want {
			return 0
		}
		what := "assertNotNil: got nil"
		if want {
			what = "assertNil: got " + tf.rt.render(v)
		}
		tf.fail(L, &testFailure{message: withMessage(L, 2, what)})
		return 0
	}
}

// assertError(fn [, pattern]) calls fn and passes when it raises an error whose message
// contains pattern as plain text or matches it as a Lua pattern (plain text first, because
// error messages are full of '-', a Lua pattern quantifier). It returns the message.
func (tf *testFile) assertError(L *lua.LState) int {
	fn := L.CheckFunction(1)
	pattern, hasPattern := L.Get(2).(lua.LString)
	if L.Get(2) != lua.LNil && !hasPattern {
		L.ArgError(2, "the error pattern must be a string")
	}
	L.Push(fn)
	err := L.PCall(0, 0, nil)
	if err == nil {
		tf.fail(L, &testFailure{message: "assertError: the function raised no error"})
		return 0
	}
	msg := errorText(err)
	if hasPattern && !messageMatches(msg, string(pattern)) {
		tf.fail(L, &testFailure{message: "assertError: the error does not match " + luaQuote(string(pattern)) + "\n    error: " + msg})
		return 0
	}
	L.Push(lua.LString(msg))
	return 1
}

func messageMatches(msg, pattern string) bool {
	if strings.Contains(msg, pattern) {
		return true
	}
	m, err := pm.Find(pattern, []byte(msg), 0, 1)
	return err == nil && len(m) > 0
}

// errorText is the message of an error raised in Lua: the error value as text, a failed
// assertion with its location.
func errorText(err error) string {
	if apiErr, ok := err.(*lua.ApiError); ok && apiErr.Object != nil {
		if ud, ok := apiErr.Object.(*lua.LUserData); ok {
			if f, ok := ud.Value.(*testFailure); ok {
				return f.String()
			}
		}
		return apiErr.Object.String()
	}
	return err.Error()
}
