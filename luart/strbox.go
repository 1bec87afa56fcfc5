package luart

import (
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// A string crossing between Go and Lua changes type, string <-> lua.LString, and so its
// interface: record values are `any`, Lua values lua.LValue. Converting one interface into the
// other through the types boxes the string header anew, an allocation per crossing (runtime
// convTstring), which the word count pays four times a record. The two functions below make
// the new interface point to the box the old one has.
//
// This is sound because:
//   - string and lua.LString have one memory layout (LString's underlying type is string), so
//     the box of either is a valid box of the other;
//   - the box of a value that is not a pointer is never written after the conversion made
//     it: a type assertion copies the value out, and a new conversion makes a new box;
//   - the box stays reachable from the new interface's data word, which the collector scans
//     as a pointer in either kind of interface, and escape analysis sees the parameter's box
//     leak to the heap (go build -gcflags=-m: "leaking param: v"), so no caller boxes the
//     string on its stack.
// TestStringBoxesAreShared checks the conversions and that they allocate nothing.

// eface is the layout of an empty interface, iface that of one with methods.
type eface struct{ typ, data unsafe.Pointer }

type iface struct{ tab, data unsafe.Pointer }

var (
	// lstringTab is the method table of lua.LString in lua.LValue.
	lstringTab = func() unsafe.Pointer {
		var v lua.LValue = lua.LString("")
		return (*iface)(unsafe.Pointer(&v)).tab
	}()
	// stringType is the type of string in an empty interface.
	stringType = func() unsafe.Pointer {
		var v any = ""
		return (*eface)(unsafe.Pointer(&v)).typ
	}()
)

// luaStringOf is lua.LString(v.(string)) in v's box; v must hold a string.
func luaStringOf(v any) lua.LValue {
	var out lua.LValue
	o := (*iface)(unsafe.Pointer(&out))
	o.tab, o.data = lstringTab, (*eface)(unsafe.Pointer(&v)).data
	return out
}

// goStringOf is string(v.(lua.LString)) in v's box; v must hold an LString.
func goStringOf(v lua.LValue) any {
	var out any
	o := (*eface)(unsafe.Pointer(&out))
	o.typ, o.data = stringType, (*iface)(unsafe.Pointer(&v)).data
	return out
}
