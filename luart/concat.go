package luart

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// concatName is the global through which compiled scripts concatenate. The VM's CONCAT
// instruction has no hook, and `s = s .. s` in a loop doubles a string in one instruction,
// faster than any checkpoint could see; so compile turns every `a .. b .. c` into
// concatName(a, b, c), which tells the memory budget the result's size before it builds it.
// A NUL byte keeps the name out of reach of Lua source.
const concatName = "\x00concat"

// rewriteConcat replaces the concatenations in a chunk by calls of concatName. A chain
// a .. b .. c (right-associative, as the compiler flattens it) becomes one call, so the
// operands are evaluated, and metamethods run, in the order the VM's CONCAT would.
func rewriteConcat(stmts []ast.Stmt) {
	for _, s := range stmts {
		concatStmt(s)
	}
}

func concatStmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		concatExprs(s.Lhs)
		concatExprs(s.Rhs)
	case *ast.LocalAssignStmt:
		concatExprs(s.Exprs)
	case *ast.FuncCallStmt:
		s.Expr = concatExpr(s.Expr)
	case *ast.DoBlockStmt:
		rewriteConcat(s.Stmts)
	case *ast.WhileStmt:
		s.Condition = concatExpr(s.Condition)
		rewriteConcat(s.Stmts)
	case *ast.RepeatStmt:
		s.Condition = concatExpr(s.Condition)
		rewriteConcat(s.Stmts)
	case *ast.IfStmt:
		s.Condition = concatExpr(s.Condition)
		rewriteConcat(s.Then)
		rewriteConcat(s.Else)
	case *ast.NumberForStmt:
		s.Init, s.Limit, s.Step = concatExpr(s.Init), concatExpr(s.Limit), concatExpr(s.Step)
		rewriteConcat(s.Stmts)
	case *ast.GenericForStmt:
		concatExprs(s.Exprs)
		rewriteConcat(s.Stmts)
	case *ast.FuncDefStmt:
		concatExpr(s.Func)
	case *ast.ReturnStmt:
		concatExprs(s.Exprs)
	}
}

func concatExprs(exprs []ast.Expr) {
	for i, e := range exprs {
		exprs[i] = concatExpr(e)
	}
}

func concatExpr(e ast.Expr) ast.Expr {
	switch x := e.(type) {
	case *ast.StringConcatOpExpr:
		args := []ast.Expr{concatExpr(x.Lhs)}
		rest := x.Rhs
		for {
			next, ok := rest.(*ast.StringConcatOpExpr)
			if !ok {
				break
			}
			args = append(args, concatExpr(next.Lhs))
			rest = next.Rhs
		}
		args = append(args, concatExpr(rest))
		fn := &ast.IdentExpr{Value: concatName}
		fn.SetLine(x.Line())
		// AdjustRet: one value, and no tail call out of `return a .. b`.
		call := &ast.FuncCallExpr{Func: fn, Args: args, AdjustRet: true}
		call.SetLine(x.Line())
		call.SetLastLine(x.LastLine())
		return call
	case *ast.AttrGetExpr:
		x.Object, x.Key = concatExpr(x.Object), concatExpr(x.Key)
	case *ast.TableExpr:
		for _, f := range x.Fields {
			f.Key, f.Value = concatExpr(f.Key), concatExpr(f.Value)
		}
	case *ast.FuncCallExpr:
		x.Func, x.Receiver = concatExpr(x.Func), concatExpr(x.Receiver)
		concatExprs(x.Args)
	case *ast.LogicalOpExpr:
		x.Lhs, x.Rhs = concatExpr(x.Lhs), concatExpr(x.Rhs)
	case *ast.RelationalOpExpr:
		x.Lhs, x.Rhs = concatExpr(x.Lhs), concatExpr(x.Rhs)
	case *ast.ArithmeticOpExpr:
		x.Lhs, x.Rhs = concatExpr(x.Lhs), concatExpr(x.Rhs)
	case *ast.UnaryMinusOpExpr:
		x.Expr = concatExpr(x.Expr)
	case *ast.UnaryNotOpExpr:
		x.Expr = concatExpr(x.Expr)
	case *ast.UnaryLenOpExpr:
		x.Expr = concatExpr(x.Expr)
	case *ast.FunctionExpr:
		rewriteConcat(x.Stmts)
	}
	return e
}

// luaConcat is concatName(...): Lua's `..` over its arguments, as gopher-lua's VM does it —
// strings and numbers joined, and from the right, a __concat metamethod of either side where
// one is neither — with the size of each string told to the memory budget first.
func luaConcat(L *lua.LState) int {
	n := L.GetTop()
	size, plain := int64(0), true
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			size += int64(len(v))
		case lua.LNumber:
			size += 24 // the longest float64 Lua writes
		default:
			plain = false
		}
	}
	if plain {
		allocate(L, "..", size)
		var b strings.Builder
		b.Grow(int(size))
		for i := 1; i <= n; i++ {
			b.WriteString(lua.LVAsString(L.Get(i)))
		}
		L.Push(lua.LString(b.String()))
		return 1
	}
	rhs := L.Get(n)
	for i := n - 1; i >= 1; i-- {
		lhs := L.Get(i)
		if lua.LVCanConvToString(lhs) && lua.LVCanConvToString(rhs) {
			l, r := lua.LVAsString(lhs), lua.LVAsString(rhs)
			allocate(L, "..", int64(len(l))+int64(len(r)))
			rhs = lua.LString(l + r)
			continue
		}
		op := L.GetMetaField(lhs, "__concat")
		if op == lua.LNil {
			op = L.GetMetaField(rhs, "__concat")
		}
		if op.Type() != lua.LTFunction {
			L.RaiseError("cannot perform concat operation between %v and %v", lhs.Type().String(), rhs.Type().String())
		}
		L.Push(op)
		L.Push(lhs)
		L.Push(rhs)
		L.Call(2, 1)
		rhs = L.Get(-1)
		L.Pop(1)
	}
	L.Push(rhs)
	return 1
}
