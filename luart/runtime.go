// Package luart is StoatFlow's Lua runtime: the sandboxed gopher-lua state, the `stoat` module
// (the DSL bindings onto package pipeline), Go⇄Lua value conversion and per-call time budgets.
package luart

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// Options configure a Runtime.
type Options struct {
	// CallTimeout is the time budget of one Lua call (lua.call.timeout).
	CallTimeout time.Duration
	// DefaultKeySerde and DefaultValueSerde name the serdes used where a script names none.
	DefaultKeySerde, DefaultValueSerde string
	Logger                             *slog.Logger
	// Stdout receives the output of KStream:print().
	Stdout io.Writer
	// OnError is called for every error raised by a Lua call, with the script's display name.
	OnError func(script string)
	// Schemas makes the Schema Registry serdes (avro, protobuf, json-schema); nil when no
	// registry is configured, which makes naming one an error.
	Schemas *schemas.Factory
}

// Runtime owns one Lua state. It is not safe for concurrent use: the agent runs all Lua
// callbacks on its processing goroutine, as Kafka Streams runs a task on one thread.
type Runtime struct {
	L       *lua.LState
	opts    Options
	budget  *budget
	builder *pipeline.StreamsBuilder
	modules map[string]lua.LValue // loaded modules by file path
	scripts []string              // display names of the loaded scripts
	loading string                // display name of the script being loaded

	null    *lua.LUserData
	arrayMT *lua.LTable
	rctx    *recordContext
	clock   func() int64
	// luaTime is the time spent in Lua calls so far (nested calls count once per level).
	luaTime time.Duration
	depth   int // nesting of Lua calls (a Lua callback can run another through ctx:forward)
	// iterators are the store iterators opened by the running callback.
	iterators []interface{ Close() }
	// Warnings collects non-fatal notices found while loading (e.g. deprecated forms).
	Warnings []string
}

// New creates a sandboxed Lua state with the stoat module.
func New(opts Options) (*Runtime, error) {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.DefaultKeySerde == "" {
		opts.DefaultKeySerde = "string"
	}
	if opts.DefaultValueSerde == "" {
		opts.DefaultValueSerde = "string"
	}
	keySerde, err := serdes.ByName(opts.DefaultKeySerde)
	if err != nil {
		return nil, fmt.Errorf("default.key.serde: %w", err)
	}
	valueSerde, err := serdes.ByName(opts.DefaultValueSerde)
	if err != nil {
		return nil, fmt.Errorf("default.value.serde: %w", err)
	}
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	openSandbox(L)
	rt := &Runtime{
		L:       L,
		opts:    opts,
		builder: pipeline.NewStreamsBuilder(pipeline.Serdes{Key: keySerde, Value: valueSerde}),
		modules: map[string]lua.LValue{},
		null:    L.NewUserData(),
		arrayMT: L.NewTable(),
	}
	rt.budget = newBudget(L, opts.CallTimeout)
	rt.clock = func() int64 { return time.Now().UnixMilli() }
	rt.rctx = newRecordContext(rt)
	L.SetGlobal("print", L.NewFunction(rt.luaPrint))
	return rt, nil
}

// Close releases the Lua state.
func (rt *Runtime) Close() {
	rt.budget.close()
	rt.L.Close()
}

// Builder is the topology builder the scripts filled in.
func (rt *Runtime) Builder() *pipeline.StreamsBuilder { return rt.builder }

// LoadScripts runs each script; every script must return the builder from stoat.builder().
// All scripts add to the one topology of the application. A failing script does not stop
// the others from loading, so that one run reports the problems of every script (a Lua
// script itself stops at its first error); the error joins them, one per line.
func (rt *Runtime) LoadScripts(paths []string) (*pipeline.StreamsBuilder, error) {
	var errs []error
	for _, p := range paths {
		if err := rt.loadScript(p); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return rt.builder, nil
}

func (rt *Runtime) loadScript(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	name := displayName(abs)
	fn, err := rt.compile(abs, name)
	if err != nil {
		return err
	}
	rt.scripts = append(rt.scripts, name)
	rt.loading = name
	defer func() { rt.loading = "" }()
	rt.modules[abs] = lua.LTrue
	rt.L.Push(fn)
	if err := rt.pcall(0, 1); err != nil {
		return err
	}
	ret := rt.L.Get(-1)
	rt.L.Pop(1)
	if ud, ok := ret.(*lua.LUserData); !ok || ud.Value != rt.builder {
		return fmt.Errorf("%s: the script must end with `return b`, where b = require(\"stoat\").builder() (it returned %s)", name, ret.Type())
	}
	return nil
}

// compile parses and compiles a file into a function whose environment is the sandbox, and
// whose require() only sees modules below the file's directory.
func (rt *Runtime) compile(abs, name string) (*lua.LFunction, error) {
	src, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("cannot read script: %w", err)
	}
	defer src.Close()
	chunk, err := parse.Parse(src, name)
	if err != nil {
		var perr *parse.Error
		if errors.As(err, &perr) && perr.Pos.Line > 0 {
			// file:line, as every other script error names its place.
			return nil, fmt.Errorf("%s:%d: syntax error near '%s': %s", name, perr.Pos.Line, perr.Token, perr.Message)
		}
		return nil, fmt.Errorf("%s", strings.TrimSpace(err.Error()))
	}
	proto, err := lua.Compile(chunk, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	fn := rt.L.NewFunctionFromProto(proto)
	env := rt.L.NewTable()
	mt := rt.L.NewTable()
	mt.RawSetString("__index", rt.L.G.Global)
	rt.L.SetMetatable(env, mt)
	env.RawSetString("require", rt.L.NewFunction(rt.requireFrom(filepath.Dir(abs))))
	fn.Env = env
	return fn, nil
}

func (rt *Runtime) requireFrom(dir string) lua.LGFunction {
	return func(L *lua.LState) int {
		name := L.CheckString(1)
		if name == "stoat" {
			L.Push(rt.stoatModule())
			return 1
		}
		path, err := resolveModule(dir, name)
		if err != nil {
			L.RaiseError("%v", err)
			return 0
		}
		abs, _ := filepath.Abs(path)
		if mod, ok := rt.modules[abs]; ok {
			L.Push(mod)
			return 1
		}
		fn, err := rt.compile(abs, displayName(abs))
		if err != nil {
			L.RaiseError("%v", err)
			return 0
		}
		L.Push(fn)
		L.Call(0, 1)
		mod := L.Get(-1)
		if mod == lua.LNil {
			mod = lua.LTrue
		}
		rt.modules[abs] = mod
		L.Pop(1)
		L.Push(mod)
		return 1
	}
}

// displayName is how errors name a script: relative to the working directory when below it.
func displayName(abs string) string {
	wd, err := os.Getwd()
	if err == nil {
		if rel, err := filepath.Rel(wd, abs); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return abs
}

// ScriptError is an error raised by Lua code, or a Lua call stopped by its time budget.
// Message starts with the script's file:line.
type ScriptError struct {
	Message  string
	Timeout  bool
	Location string // file:line, when known
}

func (e *ScriptError) Error() string { return e.Message }

// pcall calls the function below nargs arguments on the stack under the time budget.
func (rt *Runtime) pcall(nargs, nret int) error {
	rt.budget.begin()
	start := time.Now()
	rt.depth++
	err := rt.L.PCall(nargs, nret, nil)
	if rt.depth--; rt.depth == 0 {
		rt.luaTime += time.Since(start)
	}
	timedOut := rt.budget.end()
	if err == nil {
		return nil
	}
	se := &ScriptError{Message: err.Error()}
	var apiErr *lua.ApiError
	if errors.As(err, &apiErr) && apiErr.Object != nil {
		se.Message = apiErr.Object.String()
	}
	se.Location = location(se.Message)
	if timedOut {
		se.Timeout = true
		se.Message = fmt.Sprintf("%s: Lua call exceeded its time budget of %s (agent.lua.call.timeout)", se.Location, rt.opts.CallTimeout)
	}
	if rt.opts.OnError != nil {
		rt.opts.OnError(scriptOf(se.Location))
	}
	return se
}

// location extracts the leading "file:line" of a Lua error message.
func location(msg string) string {
	parts := strings.SplitN(msg, ":", 3)
	if len(parts) >= 2 {
		if _, err := fmt.Sscanf(parts[1], "%d", new(int)); err == nil {
			return parts[0] + ":" + parts[1]
		}
	}
	return "<lua>"
}

func scriptOf(loc string) string {
	if i := strings.LastIndexByte(loc, ':'); i > 0 {
		return loc[:i]
	}
	return loc
}

func (rt *Runtime) luaPrint(L *lua.LState) int {
	n := L.GetTop()
	parts := make([]string, n)
	for i := 1; i <= n; i++ {
		parts[i-1] = L.ToStringMeta(L.Get(i)).String()
	}
	rt.opts.Logger.Info(strings.Join(parts, "\t"), "source", "lua print", "at", rt.where())
	return 0
}

// where is the file:line of the Lua code calling into Go.
func (rt *Runtime) where() string {
	return strings.TrimSuffix(rt.L.Where(1), ":")
}

// SetClock replaces the wall clock the "wallclock" timestamp extractor reads (the test
// driver's mock clock).
func (rt *Runtime) SetClock(clock func() int64) { rt.clock = clock }

func (rt *Runtime) now() int64 { return rt.clock() }

// LuaTime is the total time spent in Lua calls, for the Lua time metric.
func (rt *Runtime) LuaTime() time.Duration { return rt.luaTime }
