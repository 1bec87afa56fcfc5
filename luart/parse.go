package luart

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// parseScript parses a script and makes its errors point at the mistake: a syntax error
// that a missing `end` caused also names the line of the block left open, and every method
// call `x:m(...)` carries the line of its `:m` (gopher-lua gives a chain of calls the line
// where the chain starts, so a misspelled method on line 5 of a chain was reported at its
// first line).
func parseScript(src []byte, name string) ([]ast.Stmt, error) {
	toks, lexErr := scanTokens(src, name)
	chunk, err := parse.Parse(bytes.NewReader(src), name)
	if err != nil {
		var perr *parse.Error
		if !errors.As(err, &perr) {
			return nil, fmt.Errorf("%s", strings.TrimSpace(err.Error()))
		}
		if lexErr != nil {
			return nil, fmt.Errorf("%s:%d: %s near '%s'", name, perr.Pos.Line, perr.Message, perr.Token)
		}
		return nil, syntaxError(name, perr, toks)
	}
	if lexErr == nil {
		setMethodLines(chunk, toks)
	}
	return chunk, nil
}

// scanTokens lexes a script with gopher-lua's own scanner.
func scanTokens(src []byte, name string) ([]ast.Token, error) {
	sc := parse.NewScanner(bytes.NewReader(src), name)
	lx := &parse.Lexer{}
	var toks []ast.Token
	for {
		tok, err := sc.Scan(lx)
		if err != nil {
			return nil, err
		}
		if tok.Type == parse.EOF {
			return toks, nil
		}
		lx.PrevTokenType = tok.Type
		toks = append(toks, tok)
	}
}

// syntaxError words a parse error as file:line. When the parser gave up where an open
// block had to end (at the end of the file, at a closing bracket, or after the block's
// return statement), the `end` of that block is missing: the error names the block's line.
func syntaxError(name string, perr *parse.Error, toks []ast.Token) error {
	atEOF := perr.Pos.Line <= 0
	line := perr.Pos.Line
	if atEOF && len(toks) > 0 {
		line = toks[len(toks)-1].Pos.Line
	}
	near := "'" + perr.Token + "'"
	if atEOF {
		near = "the end of the file"
	}
	msg := fmt.Sprintf("%s:%d: syntax error near %s", name, line, near)
	if open := unclosedBlock(toks, perr.Pos, atEOF); open != nil {
		closer := "end"
		if open.Type == parse.TRepeat {
			closer = "until"
		}
		return fmt.Errorf("%s: '%s' expected (to close '%s' at line %d)", msg, closer, open.Str, open.Pos.Line)
	}
	if perr.Message != "syntax error" {
		msg += ": " + perr.Message
	}
	return errors.New(msg)
}

// openBlock is a block or bracket that the scan of the tokens has not seen closed yet.
type openBlock struct {
	tok      ast.Token
	returned bool // the block's return statement was seen: only its end may follow
}

// unclosedBlock is the innermost block still open where the parser failed, when the token
// it failed at shows that block should have ended there; nil otherwise.
func unclosedBlock(toks []ast.Token, at ast.Position, atEOF bool) *ast.Token {
	var stack []openBlock
	top := func() *openBlock {
		if len(stack) == 0 {
			return nil
		}
		return &stack[len(stack)-1]
	}
	isBlock := func(b *openBlock) bool {
		return b != nil && b.tok.Type != '(' && b.tok.Type != '[' && b.tok.Type != '{'
	}
	loopHeader := false // between while/for and its do
	for _, tok := range toks {
		if !atEOF && (tok.Pos.Line > at.Line || tok.Pos.Line == at.Line && tok.Pos.Column >= at.Column) {
			t := top()
			switch {
			case !isBlock(t):
				return nil
			case tok.Type == ')' || tok.Type == ']' || tok.Type == '}' || t.returned:
				return &t.tok
			}
			return nil
		}
		switch tok.Type {
		case parse.TFunction, parse.TIf, parse.TRepeat, '(', '[', '{':
			stack = append(stack, openBlock{tok: tok})
		case parse.TWhile, parse.TFor:
			stack = append(stack, openBlock{tok: tok})
			loopHeader = true
		case parse.TDo:
			if loopHeader {
				loopHeader = false
			} else {
				stack = append(stack, openBlock{tok: tok})
			}
		case parse.TReturn:
			if t := top(); t != nil {
				t.returned = true
			}
		case parse.TElse, parse.TElseIf:
			if t := top(); t != nil {
				t.returned = false
			}
		case parse.TEnd, parse.TUntil, ')', ']', '}':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	for i := len(stack) - 1; i >= 0; i-- {
		if isBlock(&stack[i]) {
			return &stack[i].tok
		}
	}
	return nil
}

// setMethodLines gives every method call the line of its `:name`. The tokens hold each
// `:name` of the script in source order, method definitions (`function t:name()`) too; the
// walk visits calls and definitions in the same order. If the counts differ, the lines stay
// as the parser set them.
func setMethodLines(chunk []ast.Stmt, toks []ast.Token) {
	var lines []int
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].Type == ':' && toks[i+1].Type == parse.TIdent {
			lines = append(lines, toks[i+1].Pos.Line)
		}
	}
	var sites []*ast.FuncCallExpr
	walkSource(chunk, func(call *ast.FuncCallExpr) { sites = append(sites, call) })
	if len(sites) != len(lines) {
		return
	}
	for i, call := range sites {
		if call != nil {
			call.SetLine(lines[i])
		}
	}
}

// walkSource visits, in source order, every method call of the chunk, and a nil call for
// every method definition (`function t:name() ... end`).
func walkSource(chunk []ast.Stmt, visit func(*ast.FuncCallExpr)) {
	w := &sourceWalker{method: visit}
	w.stmts(chunk)
}

// sourceWalker walks statements and expressions in the order their tokens appear, and
// keeps track of the local names in scope and of how deep in functions it is.
type sourceWalker struct {
	method func(*ast.FuncCallExpr) // a method call, or nil for a method definition
	call   func(*ast.FuncCallExpr) // any call, method or not
	scopes []map[string]bool
	depth  int // functions the walk is in
}

func (w *sourceWalker) stmts(list []ast.Stmt) {
	for _, s := range list {
		w.stmt(s)
	}
}

// block walks a block in a scope of its own, with names declared at its start.
func (w *sourceWalker) block(list []ast.Stmt, names ...string) {
	w.scopes = append(w.scopes, map[string]bool{})
	w.declare(names...)
	w.stmts(list)
	w.scopes = w.scopes[:len(w.scopes)-1]
}

func (w *sourceWalker) declare(names ...string) {
	if len(w.scopes) == 0 {
		w.scopes = append(w.scopes, map[string]bool{})
	}
	for _, n := range names {
		w.scopes[len(w.scopes)-1][n] = true
	}
}

// isLocal reports whether name is a local variable where the walk is.
func (w *sourceWalker) isLocal(name string) bool {
	for _, sc := range w.scopes {
		if sc[name] {
			return true
		}
	}
	return false
}

func (w *sourceWalker) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		w.exprs(s.Lhs)
		w.exprs(s.Rhs)
	case *ast.LocalAssignStmt:
		w.exprs(s.Exprs)
		w.declare(s.Names...)
	case *ast.FuncCallStmt:
		w.expr(s.Expr)
	case *ast.DoBlockStmt:
		w.block(s.Stmts)
	case *ast.WhileStmt:
		w.expr(s.Condition)
		w.block(s.Stmts)
	case *ast.RepeatStmt:
		// The condition sees the body's locals.
		w.scopes = append(w.scopes, map[string]bool{})
		w.stmts(s.Stmts)
		w.expr(s.Condition)
		w.scopes = w.scopes[:len(w.scopes)-1]
	case *ast.IfStmt:
		w.expr(s.Condition)
		w.block(s.Then)
		w.block(s.Else)
	case *ast.NumberForStmt:
		w.expr(s.Init)
		w.expr(s.Limit)
		w.expr(s.Step)
		w.block(s.Stmts, s.Name)
	case *ast.GenericForStmt:
		w.exprs(s.Exprs)
		w.block(s.Stmts, s.Names...)
	case *ast.FuncDefStmt:
		if s.Name.Func != nil {
			w.expr(s.Name.Func)
		} else {
			w.expr(s.Name.Receiver)
			if w.method != nil {
				w.method(nil)
			}
		}
		w.expr(s.Func)
	case *ast.ReturnStmt:
		w.exprs(s.Exprs)
	}
}

func (w *sourceWalker) exprs(list []ast.Expr) {
	for _, e := range list {
		w.expr(e)
	}
}

func (w *sourceWalker) expr(e ast.Expr) {
	switch e := e.(type) {
	case *ast.AttrGetExpr:
		w.expr(e.Object)
		w.expr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			w.expr(f.Key)
			w.expr(f.Value)
		}
	case *ast.FuncCallExpr:
		if e.Func != nil {
			w.expr(e.Func)
		} else {
			w.expr(e.Receiver)
			if w.method != nil {
				w.method(e)
			}
		}
		if w.call != nil {
			w.call(e)
		}
		w.exprs(e.Args)
	case *ast.LogicalOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.StringConcatOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		w.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		w.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		w.expr(e.Expr)
	case *ast.FunctionExpr:
		w.depth++
		var params []string
		if e.ParList != nil {
			params = e.ParList.Names
		}
		w.block(e.Stmts, params...)
		w.depth--
	}
}
