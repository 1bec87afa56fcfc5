package luart

import (
	"slices"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// A callback's key or value that reaches Lua as a table of a fixed shape (an Avro record, a
// windowed key) costs most of a record's time in gopher-lua's table building: each field
// boxes its key twice and grows the table's key list. When the function's bytecode shows
// that the table cannot outlive the call (it is only indexed, assigned to under constant
// string keys, and returned to the runtime, which converts or writes what a callback
// returns before the next call), one table per argument is refilled for every call instead.
// The function cannot tell: it sees the same fields, and nothing it can do with the table
// (compare it, print it, pass it on, iterate it) is allowed by the analysis.

// argTable is the table kept for one argument of one function.
type argTable struct {
	// written are the constant keys the function assigns to the table: removed before each
	// refill, so that a refilled table holds exactly what a new one would.
	written []string
	t       *lua.LTable
	schema  schemas.AvroSchema // the schema of the record t holds, for Avro records
	// keepWindow is whether the function only reads through a windowed key's window table,
	// which window keeps then.
	keepWindow bool
	window     *lua.LTable
	// inSchema is, for each written key, whether schema has that field.
	inSchema []bool
	busy     bool // t is in use by a call in progress
	build    recordBuilder
	// handed is t as a mapValues function hands it on to a Schema Registry sink, values how
	// the sink reads it (serde_table.go).
	handed luaTable
	values luaValues
}

// argUse is what fn does with its argument reg (0-based): unread, when no instruction
// mentions the register (the function cannot see the argument), else kept, the argTable
// for it, or nil when fn may keep or expose the table.
func argUse(fn *lua.LFunction, reg int) (unread bool, kept *argTable) {
	if fn.IsG || fn.Proto.IsVarArg != 0 || int(fn.Proto.NumParameters) <= reg {
		return false, nil
	}
	u, ok := staysInCall(fn.Proto, reg)
	if !ok {
		return false, nil
	}
	return !u.used, &argTable{written: u.written, keepWindow: !u.anyHeld && !slices.Contains(u.held, "window")}
}

// argUsage is what a function does with a table argument that stays in its call.
type argUsage struct {
	written []string // constant keys it assigns to
	used    bool     // whether it mentions the argument at all
	// held are the constant keys whose field values it may keep beyond the instruction after
	// the one reading them (wk.window.start reads the window and drops it at once); anyHeld
	// is set when it reads fields under keys that are not constants.
	held    []string
	anyHeld bool
}

// refill returns t emptied of what the last call wrote, or nil when a new table is needed.
func (a *argTable) refill() *lua.LTable {
	if a.t == nil {
		return nil
	}
	for _, k := range a.written {
		a.t.RawSetString(k, lua.LNil)
	}
	return a.t
}

// staysInCall reports whether register reg of proto holds, through the whole function, a
// table the function only reads fields of, assigns fields of under constant string keys, and
// returns, and what it does so. Any other mention of the register (passing it to a call,
// storing it, comparing it, capturing it in a closure, overwriting it, iterating it) makes ok
// false. Instructions are decoded as gopher-lua v1.1.2 encodes them (opcode.go).
func staysInCall(proto *lua.FunctionProto, reg int) (u argUsage, ok bool) {
	code := proto.Code
	for pc := 0; pc < len(code); pc++ {
		inst := code[pc]
		op := int(inst >> 26)
		a, b, c := int(inst>>18)&0xff, int(inst&0x1ff), int(inst>>9)&0x1ff
		switch op {
		case lua.OP_GETTABLE, lua.OP_GETTABLEKS:
			// R(A) := R(B)[RK(C)]: reading a field is the use allowed.
			if a == reg || c == reg {
				return argUsage{}, false
			}
			if b != reg {
				break
			}
			u.used = true
			if !readsThrough(code, pc) {
				if k, ok := constantString(proto, c); ok {
					u.held = appendNew(u.held, k)
				} else if _, number := rkConstant(proto, c); !number {
					u.anyHeld = true
				}
			}
		case lua.OP_SETTABLE, lua.OP_SETTABLEKS:
			// R(A)[RK(B)] := RK(C)
			if b == reg || c == reg {
				return argUsage{}, false
			}
			if a != reg {
				break
			}
			u.used = true
			if k, ok := constantString(proto, b); ok {
				u.written = appendNew(u.written, k)
			} else if op == lua.OP_SETTABLEKS {
				// The key is a string constant the compiler loaded into register B.
				for _, k := range proto.Constants {
					if k, ok := k.(lua.LString); ok {
						u.written = appendNew(u.written, string(k))
					}
				}
			} else {
				return argUsage{}, false
			}
		case lua.OP_RETURN:
			// return R(A) ... R(A+B-2); B = 0 returns up to the top.
			if b == 0 && a <= reg {
				return argUsage{}, false
			}
			u.used = u.used || (a <= reg && reg <= a+b-2)
		case lua.OP_JMP, lua.OP_NOP, lua.OP_CLOSE:
		case lua.OP_LOADK, lua.OP_GETGLOBAL, lua.OP_SETGLOBAL, lua.OP_NEWTABLE, lua.OP_LOADBOOL,
			lua.OP_GETUPVAL, lua.OP_SETUPVAL, lua.OP_TEST:
			// Only A is a register.
			if a == reg {
				return argUsage{}, false
			}
		case lua.OP_CLOSURE:
			if a == reg {
				return argUsage{}, false
			}
			// The closure's upvalues follow as MOVE (a local: register B) or GETUPVAL words.
			n := int(proto.FunctionPrototypes[inst&0x3ffff].NumUpvalues)
			for _, w := range code[pc+1 : min(pc+1+n, len(code))] {
				if int(w>>26) == lua.OP_MOVE && int(w&0x1ff) == reg {
					return argUsage{}, false
				}
			}
			pc += n
		case lua.OP_LOADNIL:
			// R(A) ... R(B) := nil
			if a <= reg && reg <= b {
				return argUsage{}, false
			}
		case lua.OP_CONCAT:
			// R(A) := R(B) .. ... .. R(C)
			if a == reg || (b <= reg && reg <= c) {
				return argUsage{}, false
			}
		case lua.OP_SELF:
			// R(A+1) := R(B); R(A) := R(B)[RK(C)]
			if a == reg || a+1 == reg || b == reg || c == reg {
				return argUsage{}, false
			}
		case lua.OP_MOVE, lua.OP_MOVEN, lua.OP_UNM, lua.OP_NOT, lua.OP_LEN, lua.OP_TESTSET:
			// R(A) := R(B); C is a count or a flag. MOVEN's further moves follow as MOVE words.
			if a == reg || b == reg {
				return argUsage{}, false
			}
		case lua.OP_EQ, lua.OP_LT, lua.OP_LE:
			// A is a flag.
			if b == reg || c == reg {
				return argUsage{}, false
			}
		case lua.OP_CALL, lua.OP_TAILCALL, lua.OP_VARARG, lua.OP_TFORLOOP, lua.OP_FORLOOP, lua.OP_FORPREP:
			// Registers from A upwards.
			if a <= reg {
				return argUsage{}, false
			}
		case lua.OP_SETLIST:
			if a <= reg {
				return argUsage{}, false
			}
			if c == 0 {
				pc++ // the next word is the block number
			}
		default:
			// Arithmetic, and any opcode not known here: every operand counts as a register.
			if op > lua.OP_NOP || a == reg || b == reg || c == reg {
				return argUsage{}, false
			}
		}
	}
	return u, true
}

// readsThrough reports whether the field read by code[pc] into R(A) is only read a field of
// by the next instruction, which overwrites R(A): the value is gone after it.
func readsThrough(code []uint32, pc int) bool {
	if pc+1 >= len(code) {
		return false
	}
	a, next := int(code[pc]>>18)&0xff, code[pc+1]
	op := int(next >> 26)
	return (op == lua.OP_GETTABLE || op == lua.OP_GETTABLEKS) &&
		int(next>>18)&0xff == a && int(next&0x1ff) == a && int(next>>9)&0x1ff != a
}

// constantString is the string constant RK operand rk names, if it names one.
func constantString(proto *lua.FunctionProto, rk int) (string, bool) {
	k, _ := rkConstant(proto, rk)
	s, ok := k.(lua.LString)
	return string(s), ok
}

// rkConstant is the constant RK operand rk names, and whether it is a number; nil for a
// register.
func rkConstant(proto *lua.FunctionProto, rk int) (lua.LValue, bool) {
	const bitRK = 1 << 8
	if rk&bitRK == 0 || rk&^bitRK >= len(proto.Constants) {
		return nil, false
	}
	k := proto.Constants[rk&^bitRK]
	_, number := k.(lua.LNumber)
	return k, number
}

func appendNew(list []string, s string) []string {
	for _, e := range list {
		if e == s {
			return list
		}
	}
	return append(list, s)
}

// argToLua converts a callback's argument v as toLua does, into a's table where a keeps one
// and v is of a shape it can be refilled with. The table is a's until release.
func (rt *Runtime) argToLua(v any, a *argTable) lua.LValue {
	if a == nil || a.busy {
		return rt.toLua(v)
	}
	switch x := v.(type) {
	case *schemas.Raw:
		s := x.Schema()
		if !s.IsRecord() {
			break
		}
		if a.schema != s {
			a.t, a.schema = nil, s
			a.inSchema = a.inSchema[:0]
			for _, k := range a.written {
				a.inSchema = append(a.inSchema, s.HasField(k))
			}
		}
		a.build = recordBuilder{luaBuilder: luaBuilder{rt}, top: a.refill()}
		a.t = rt.buildRaw(x, &a.build).(*lua.LTable)
	case pipeline.Windowed:
		if a.schema != (schemas.AvroSchema{}) {
			a.t, a.schema = nil, schemas.AvroSchema{}
		}
		if a.keepWindow && a.window == nil {
			a.window = rt.L.CreateTable(0, 2)
		}
		a.t = rt.windowedInto(a.refill(), a.window, x)
	default:
		return rt.toLua(v)
	}
	a.busy = true
	return a.t
}

// entries is how many entries t holds after the call it was refilled for: the record's
// fields, less the ones the function removed, and the other keys it assigned.
func (a *argTable) entries() int {
	n := a.schema.NumFields()
	for i, k := range a.written {
		switch present := a.t.RawGetString(k) != lua.LNil; {
		case a.inSchema[i] && !present:
			n--
		case !a.inSchema[i] && present:
			n++
		}
	}
	return n
}

// release ends the call a's table was handed to.
func (a *argTable) release() {
	if a != nil {
		a.busy = false
	}
}
