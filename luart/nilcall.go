package luart

import (
	"sort"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/luart/suggest"
)

// markNilCalls makes calling a nil value say what was called. Lua's own error, "attempt to
// call a non-function object", names neither the function nor the value: a typo in a method
// (line:lowr()) passes every check at load time and stops the pipeline at its first record
// with no hint. nil gets a metatable whose __call raises instead: for a method call, the
// method, the receiver's type and the closest method it has ("string has no method "lowr";
// did you mean "lower"?); for any other call, the name called. Only calls of nil reach
// __call (the VM calls a function directly), so correct scripts pay nothing; __metatable
// keeps getmetatable(nil) from handing the table to a script.
func markNilCalls(L *lua.LState) {
	mt := L.NewTable()
	mt.RawSetString("__call", L.NewFunction(nilCall))
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(lua.LNil, mt)
}

// nilCall is nil's __call: L.Get(1) is the nil called, the arguments follow.
func nilCall(L *lua.LState) int {
	self, _ := L.GetStack(0)
	if _, err := L.GetInfo("n", self, lua.LNil); err != nil || self.Name == "" || self.Name == "?" {
		L.RaiseError("attempt to call a nil value")
	}
	name := self.Name
	caller := callerOf(L)
	switch {
	case L.GetTop() >= 2 && caller.looksUp(lua.OP_SELF, name):
		typeName, methods := methodsOf(L, L.Get(2))
		if len(methods) == 0 {
			L.RaiseError("%s has no method %q (it has no methods)", typeName, name)
		}
		noSuchName(L, typeName, "method", name, methods)
	case caller.looksUp(lua.OP_GETGLOBAL, name):
		if best, ok := suggest.Closest(name, functionsIn(caller.fn.Env)); ok {
			L.RaiseError("attempt to call a nil value (global %q); did you mean %q?", name, best)
		}
		L.RaiseError("attempt to call a nil value (global %q)", name)
	}
	L.RaiseError("attempt to call a nil value (%q)", name)
	return 0
}

// callSite is the Lua function that called nil and the line it did so on.
type callSite struct {
	fn   *lua.LFunction // nil when the caller is not a Lua function
	line int
}

func callerOf(L *lua.LState) callSite {
	caller, ok := L.GetStack(1)
	if !ok {
		return callSite{}
	}
	fv, err := L.GetInfo("fl", caller, lua.LNil)
	fn, isFn := fv.(*lua.LFunction)
	if err != nil || !isFn || fn.Proto == nil {
		return callSite{}
	}
	return callSite{fn: fn, line: caller.CurrentLine}
}

// looksUp reports whether the call site's line has an instruction op (OP_SELF: a method
// call recv:name(...); OP_GETGLOBAL: a global) of the constant name. The instruction layout
// is Lua 5.1's, which gopher-lua keeps: the opcode in the top 6 bits; OP_SELF's C in bits
// 9-17, bit 8 of it marking a constant; OP_GETGLOBAL's Bx in the low 18 bits.
func (c callSite) looksUp(op int, name string) bool {
	if c.fn == nil {
		return false
	}
	p := c.fn.Proto
	for pc, inst := range p.Code {
		if int(inst>>26) != op || pc >= len(p.DbgSourcePositions) || p.DbgSourcePositions[pc] != c.line {
			continue
		}
		k := -1
		switch op {
		case lua.OP_SELF:
			if arg := int(inst>>9) & 0x1ff; arg&0x100 != 0 {
				k = arg &^ 0x100
			}
		case lua.OP_GETGLOBAL:
			k = int(inst & 0x3ffff)
		}
		if k >= 0 && k < len(p.Constants) && p.Constants[k] == lua.LString(name) {
			return true
		}
	}
	return false
}

// functionsIn names the fields of t that are functions.
func functionsIn(t *lua.LTable) []string {
	var names []string
	if t == nil {
		return nil
	}
	t.ForEach(func(k, v lua.LValue) {
		if ks, ok := k.(lua.LString); ok && v.Type() == lua.LTFunction {
			names = append(names, string(ks))
		}
	})
	sort.Strings(names)
	return names
}

// methodsOf names v's type and the methods a method call on it can find: a string's are the
// string library's; a table's, its fields that are functions and those of its metatable's
// __index table; other values', those of their metatable's __index table.
func methodsOf(L *lua.LState, v lua.LValue) (string, []string) {
	typeName := v.Type().String()
	seen := map[string]bool{}
	add := func(t *lua.LTable) {
		t.ForEach(func(k, fv lua.LValue) {
			if ks, ok := k.(lua.LString); ok && fv.Type() == lua.LTFunction && !seen[string(ks)] {
				seen[string(ks)] = true
			}
		})
	}
	if t, ok := v.(*lua.LTable); ok {
		add(t)
	}
	if idx, ok := L.GetMetaField(v, "__index").(*lua.LTable); ok {
		add(idx)
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return typeName, names
}
