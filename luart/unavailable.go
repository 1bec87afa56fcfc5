package luart

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// lua51Library is Lua 5.1's standard library: the base functions ("") and the functions of
// each library table. Whatever of it the sandbox does not give scripts is named as
// unavailable when a script uses it, instead of Lua's "attempt to call a nil value".
var lua51Library = map[string][]string{
	"": {"assert", "collectgarbage", "dofile", "error", "gcinfo", "getfenv", "getmetatable",
		"ipairs", "load", "loadfile", "loadstring", "module", "newproxy", "next", "pairs", "pcall",
		"print", "rawequal", "rawget", "rawset", "require", "select", "setfenv", "setmetatable",
		"tonumber", "tostring", "type", "unpack", "xpcall"},
	"os": {"clock", "date", "difftime", "execute", "exit", "getenv", "remove", "rename",
		"setlocale", "time", "tmpname"},
	"io": {"close", "flush", "input", "lines", "open", "output", "popen", "read", "stderr",
		"stdin", "stdout", "tmpfile", "type", "write"},
	"debug": {"debug", "getfenv", "gethook", "getinfo", "getlocal", "getmetatable",
		"getregistry", "getupvalue", "setfenv", "sethook", "setlocal", "setmetatable",
		"setupvalue", "traceback"},
	"package": {"cpath", "loaded", "loaders", "loadlib", "path", "preload", "seeall"},
	"string": {"byte", "char", "dump", "find", "format", "gmatch", "gsub", "len", "lower",
		"match", "rep", "reverse", "sub", "upper"},
	"table": {"concat", "foreach", "foreachi", "getn", "insert", "maxn", "remove", "setn", "sort"},
}

// unavailableError is what using a part of Lua's library the sandbox lacks raises.
func unavailableError(name string) string {
	return fmt.Sprintf("%s is not available: StoatFlow scripts run in a sandbox without it (docs/lua.md, The sandbox)", name)
}

// markUnavailable makes what the sandbox removed from Lua's library say so when a script
// uses it: a missing base function or library table, and a missing function of a library
// the sandbox keeps part of (os.execute), is a function raising unavailableError. Only
// lookups that find nothing reach these, so the globals scripts do use stay plain tables.
func markUnavailable(L *lua.LState) {
	g := L.G.Global
	missing := map[string]bool{}
	for lib, names := range lua51Library {
		if lib != "" {
			if g.RawGetString(lib) == lua.LNil {
				missing[lib] = true
				continue
			}
			if t, ok := g.RawGetString(lib).(*lua.LTable); ok {
				setMissingIndex(L, t, lib+".", names)
			}
			continue
		}
		for _, n := range names {
			if g.RawGetString(n) == lua.LNil {
				missing[n] = true
			}
		}
	}
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		name, ok := L.Get(2).(lua.LString)
		if !ok || !missing[string(name)] {
			L.Push(lua.LNil)
			return 1
		}
		if names, isLib := lua51Library[string(name)]; isLib {
			lib := L.NewTable()
			setMissingIndex(L, lib, string(name)+".", names)
			L.Push(lib)
			return 1
		}
		L.Push(unavailableFunction(L, string(name)))
		return 1
	}))
	L.SetMetatable(g, mt)
}

// setMissingIndex makes the names of a library the table t lacks unavailable functions.
func setMissingIndex(L *lua.LState, t *lua.LTable, prefix string, names []string) {
	var missing []string
	for _, n := range names {
		if t.RawGetString(n) == lua.LNil {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return
	}
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		name, ok := L.Get(2).(lua.LString)
		for _, n := range missing {
			if ok && string(name) == n {
				L.Push(unavailableFunction(L, prefix+n))
				return 1
			}
		}
		L.Push(lua.LNil)
		return 1
	}))
	L.SetMetatable(t, mt)
}

func unavailableFunction(L *lua.LState, name string) *lua.LFunction {
	return L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("%s", unavailableError(name))
		return 0
	})
}

// isUnavailable reports whether a name of Lua's library ("dofile", "io.open") is one the
// sandbox lacks.
func (rt *Runtime) isUnavailable(name string) bool {
	lib, fn, dotted := strings.Cut(name, ".")
	if !dotted {
		lib, fn = "", name
	}
	known := false
	for _, n := range lua51Library[lib] {
		known = known || n == fn
	}
	if !known {
		return false
	}
	g := rt.L.G.Global
	if lib == "" {
		return g.RawGetString(fn) == lua.LNil
	}
	t, ok := g.RawGetString(lib).(*lua.LTable)
	return !ok || t.RawGetString(fn) == lua.LNil
}

// sandboxWarnings finds the calls of functions the sandbox lacks inside the functions of a
// script (its callbacks): they fail only when the callback runs, so validate says so
// ahead. A call at the top level fails the load itself.
func (rt *Runtime) sandboxWarnings(name string, chunk []ast.Stmt) []string {
	var out []string
	w := &sourceWalker{}
	w.call = func(call *ast.FuncCallExpr) {
		if w.depth == 0 {
			return
		}
		called := ""
		switch f := call.Func.(type) {
		case *ast.IdentExpr:
			if !w.isLocal(f.Value) {
				called = f.Value
			}
		case *ast.AttrGetExpr:
			lib, ok := f.Object.(*ast.IdentExpr)
			key, isName := f.Key.(*ast.StringExpr)
			if ok && isName && !w.isLocal(lib.Value) {
				called = lib.Value + "." + key.Value
			}
		}
		if called != "" && rt.isUnavailable(called) {
			out = append(out, fmt.Sprintf("%s:%d: %s; the call fails when it runs", name, call.Line(), unavailableError(called)))
		}
	}
	w.stmts(chunk)
	return out
}
