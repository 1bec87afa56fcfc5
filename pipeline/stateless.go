package pipeline

import (
	"fmt"
	"io"
)

// The stateless processors. Each forwards through the context it was initialised with.

type passThrough struct{ ctx *Context }

func (p *passThrough) Init(ctx *Context) error  { p.ctx = ctx; return nil }
func (p *passThrough) Process(rec Record) error { return p.ctx.Forward(rec) }

type filterProc struct {
	ctx  *Context
	pred Predicate
	not  bool
}

func (p *filterProc) Init(ctx *Context) error { p.ctx = ctx; return nil }
func (p *filterProc) Process(rec Record) error {
	ok, err := p.pred(rec)
	if err != nil {
		return err
	}
	if ok != p.not {
		return p.ctx.Forward(rec)
	}
	return nil
}

type selectKeyProc struct {
	ctx *Context
	fn  ValueMapper
}

func (p *selectKeyProc) Init(ctx *Context) error { p.ctx = ctx; return nil }
func (p *selectKeyProc) Process(rec Record) error {
	k, err := p.fn(rec)
	if err != nil {
		return err
	}
	rec.Key = k
	return p.ctx.Forward(rec)
}

type mapProc struct {
	ctx *Context
	fn  KeyValueMapper
}

func (p *mapProc) Init(ctx *Context) error { p.ctx = ctx; return nil }
func (p *mapProc) Process(rec Record) error {
	k, v, err := p.fn(rec)
	if err != nil {
		return err
	}
	rec.Key, rec.Value = k, v
	return p.ctx.Forward(rec)
}

type mapValuesProc struct {
	ctx *Context
	fn  ValueMapper
}

func (p *mapValuesProc) Init(ctx *Context) error { p.ctx = ctx; return nil }
func (p *mapValuesProc) Process(rec Record) error {
	v, err := p.fn(rec)
	if err != nil {
		return err
	}
	rec.Value = v
	return p.ctx.Forward(rec)
}

type flatMapProc struct {
	ctx *Context
	fn  FlatMapper
}

func (p *flatMapProc) Init(ctx *Context) error { p.ctx = ctx; return nil }
func (p *flatMapProc) Process(rec Record) error {
	kvs, err := p.fn(rec)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		out := rec
		out.Key, out.Value = kv.Key, kv.Value
		if err := p.ctx.Forward(out); err != nil {
			return err
		}
	}
	return nil
}

type flatMapValuesProc struct {
	ctx *Context
	fn  FlatValueMapper
}

func (p *flatMapValuesProc) Init(ctx *Context) error { p.ctx = ctx; return nil }
func (p *flatMapValuesProc) Process(rec Record) error {
	vs, err := p.fn(rec)
	if err != nil {
		return err
	}
	for _, v := range vs {
		out := rec
		out.Value = v
		if err := p.ctx.Forward(out); err != nil {
			return err
		}
	}
	return nil
}

type peekProc struct {
	ctx     *Context
	fn      ForeachAction
	forward bool
}

func (p *peekProc) Init(ctx *Context) error { p.ctx = ctx; return nil }
func (p *peekProc) Process(rec Record) error {
	if err := p.fn(rec); err != nil {
		return err
	}
	if p.forward {
		return p.ctx.Forward(rec)
	}
	return nil
}

type printProc struct {
	w      io.Writer
	label  string
	format func(any) string
}

func (p *printProc) Init(*Context) error { return nil }
func (p *printProc) Process(rec Record) error {
	_, err := fmt.Fprintf(p.w, "[%s]: %s, %s\n", p.label, p.format(rec.Key), p.format(rec.Value))
	return err
}

type branchProc struct {
	ctx *Context
	bs  *BranchedKStream
}

func (p *branchProc) Init(ctx *Context) error { p.ctx = ctx; return nil }
func (p *branchProc) Process(rec Record) error {
	for _, br := range p.bs.branches {
		if br.pred == nil {
			return p.ctx.ForwardTo(br.child, rec)
		}
		ok, err := br.pred(rec)
		if err != nil {
			return err
		}
		if ok {
			return p.ctx.ForwardTo(br.child, rec)
		}
	}
	return nil
}
