package luart

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/luart/pattern"
	"github.com/stoatflow/stoatflow/luart/suggest"
)

// The Lua libraries and functions a pipeline script may use. This is an allowlist: what is
// not named here (io, debug, os.execute, loadfile, dofile, load, ...) is not a global of
// scripts; the parts of Lua's library among it raise "not available" when used
// (unavailable.go), io and debug through stand-in tables.
var allowedGlobals = map[string]bool{
	"assert": true, "error": true, "ipairs": true, "next": true, "pairs": true, "pcall": true,
	"select": true, "tonumber": true, "tostring": true, "type": true, "unpack": true,
	"xpcall": true, "rawequal": true, "rawget": true, "rawset": true, "rawlen": true,
	"setmetatable": true, "getmetatable": true, "_G": true, "_VERSION": true,
	"string": true, "table": true, "math": true, "coroutine": true, "os": true,
}

var allowedMembers = map[string]map[string]bool{
	"string": set("byte", "char", "find", "format", "gmatch", "gsub", "len", "lower", "match",
		"rep", "reverse", "sub", "upper", "__index"),
	"table": set("concat", "insert", "maxn", "remove", "sort", "unpack"),
	"os":    set("time", "clock", "date", "difftime"),
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// openSandbox opens the allowed libraries and removes everything else from the globals.
func openSandbox(L *lua.LState) {
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.CoroutineLibName, lua.OpenCoroutine},
		{lua.OsLibName, lua.OpenOs},
	} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	var drop []lua.LValue
	g.ForEach(func(k, v lua.LValue) {
		name := k.String()
		if !allowedGlobals[name] {
			drop = append(drop, k)
			return
		}
		if members, ok := allowedMembers[name]; ok {
			if t, isTable := v.(*lua.LTable); isTable {
				var dropMembers []lua.LValue
				t.ForEach(func(mk, _ lua.LValue) {
					if !members[mk.String()] {
						dropMembers = append(dropMembers, mk)
					}
				})
				for _, mk := range dropMembers {
					t.RawSet(mk, lua.LNil)
				}
			}
		}
	})
	for _, k := range drop {
		g.RawSet(k, lua.LNil)
	}
	g.RawSetString("tonumber", L.NewFunction(luaToNumber))
	g.RawGetString("math").(*lua.LTable).RawSetString("random", L.NewFunction(mathRandom))
	str := g.RawGetString("string").(*lua.LTable)
	pattern.Open(L, str, allocateMore)
	openBoundedLibs(L, str, g.RawGetString("table").(*lua.LTable))
	openCoroutines(L, g.RawGetString("coroutine").(*lua.LTable))
	// Every string shares this metatable, whose __index is the string library that methods
	// (s:lower()) call; __metatable keeps getmetatable("") from handing it to a script.
	if mt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		mt.RawSetString("__metatable", lua.LFalse)
	}
}

// newEnv is the global environment of one script file (or module): its own copy of the
// globals and of the library tables, so that what a file changes in them
// (rawset(string, "lower", f)) stays in that file; _G is the environment itself.
func (rt *Runtime) newEnv(dir string) *lua.LTable {
	L := rt.L
	env := copyTable(L, L.G.Global, map[*lua.LTable]*lua.LTable{})
	env.RawSetString("_G", env)
	env.RawSetString("require", L.NewFunction(rt.requireFrom(dir)))
	env.RawSetString(concatName, L.NewFunction(luaConcat))
	rt.envs = append(rt.envs, env)
	return env
}

// copyTable copies t and the tables in it (not their metatables, which stay shared); copies
// maps each table copied to its copy, so shared and cyclic tables stay so.
func copyTable(L *lua.LState, t *lua.LTable, copies map[*lua.LTable]*lua.LTable) *lua.LTable {
	if c, ok := copies[t]; ok {
		return c
	}
	c := L.CreateTable(t.Len(), 0)
	copies[t] = c
	c.Metatable = t.Metatable
	t.ForEach(func(k, v lua.LValue) {
		if sub, ok := v.(*lua.LTable); ok {
			v = copyTable(L, sub, copies)
		}
		c.RawSet(k, v)
	})
	return c
}

var moduleName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)

// moduleNames are the modules a script could have meant by name: "stoat", and the modules
// of the .lua files (but tests) where name's would be (a.b's in dir/a).
func moduleNames(dir, name string) []string {
	names := []string{"stoat"}
	prefix := ""
	if i := strings.LastIndex(name, "."); i >= 0 {
		prefix = name[:i+1]
	}
	entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(strings.ReplaceAll(prefix, ".", "/"))))
	if err != nil {
		return names
	}
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".lua") && !strings.HasSuffix(n, "_test.lua") {
			names = append(names, prefix+strings.TrimSuffix(n, ".lua"))
		}
	}
	return names
}

// resolveModule maps require("a.b") to <dir>/a/b.lua and refuses anything outside dir.
func resolveModule(dir, name string) (string, error) {
	if !moduleName.MatchString(name) {
		return "", fmt.Errorf("require(%q): module names are dotted identifiers resolved below the script directory", name)
	}
	p := filepath.Join(dir, filepath.FromSlash(strings.ReplaceAll(name, ".", "/"))+".lua")
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if best, ok := suggest.Closest(name, moduleNames(dir, name)); ok {
			return "", fmt.Errorf("require(%q): no file %s; did you mean require(%q)?", name, p, best)
		}
		return "", fmt.Errorf("require(%q): no file %s", name, p)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	if rel, err := filepath.Rel(realDir, real); err != nil || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("require(%q): %s is outside the script directory %s", name, real, dir)
	}
	if _, err := os.Stat(real); err != nil {
		return "", fmt.Errorf("require(%q): %v", name, err)
	}
	return p, nil
}
