// Package luart is StoatFlow's Lua runtime: the sandboxed gopher-lua state, the `stoat` module
// (the DSL bindings onto package pipeline), Go⇄Lua value conversion and per-call time and
// memory budgets.
package luart

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// Options configure a Runtime.
type Options struct {
	// CallTimeout is the time budget of one Lua call (lua.call.timeout).
	CallTimeout time.Duration
	// MemoryLimit is the memory budget of the scripts' Lua data (lua.memory.max.bytes).
	MemoryLimit int64
	// DefaultKeySerde and DefaultValueSerde name the serdes used where a script names none.
	DefaultKeySerde, DefaultValueSerde string
	// WindowSize (ms, window.size.ms) is the window size of time-windowed serdes named
	// without one ("windowed-string"); 0 leaves them unable to read.
	WindowSize int64
	Logger     *slog.Logger
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
	// files are the display names of every compiled file (scripts and modules), the only
	// values the Lua error metric's script label takes; envs are their environments.
	files map[string]bool
	envs  []*lua.LTable

	null    *lua.LUserData
	arrayMT *lua.LTable
	// rawSources are the streams whose values are undecoded Avro records, with the serde of
	// their source (serde_raw.go).
	rawSources map[*pipeline.KStream]*schemas.Serde
	// tableStreams are the streams of mapValues functions, and whether those hand on their
	// tables as they are (serde_table.go).
	tableStreams map[*pipeline.KStream]*tableFlow
	rctx         *recordContext
	clock        func() int64
	// raised is the last Go error raise put into Lua during the current call (see pcall).
	raised error
	// luaTime is the time spent in Lua calls so far (nested calls count once).
	luaTime time.Duration
	nodes   nodeTimes
	// iterators are the store iterators opened by the running callback.
	iterators []interface{ Close() }
	// Warnings collects non-fatal notices found while loading (e.g. deprecated forms).
	Warnings []string
	// built holds the names of every DSL type and class built so far, with their methods
	// or functions: what a test compares with the editor definitions' dslTypes.
	built map[string][]string
}

// New creates a sandboxed Lua state with the stoat module.
func New(opts Options) (*Runtime, error) {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = time.Second
	}
	if opts.MemoryLimit <= 0 {
		opts.MemoryLimit = DefaultMemoryLimit
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
	markUnavailable(L)
	markNilCalls(L)
	rt := &Runtime{
		L:            L,
		opts:         opts,
		builder:      pipeline.NewStreamsBuilder(pipeline.Serdes{Key: keySerde, Value: valueSerde}),
		modules:      map[string]lua.LValue{},
		files:        map[string]bool{},
		built:        map[string][]string{},
		rawSources:   map[*pipeline.KStream]*schemas.Serde{},
		tableStreams: map[*pipeline.KStream]*tableFlow{},
		null:         L.NewUserData(),
		arrayMT:      L.NewTable(),
	}
	if rt.budget, err = newBudget(rt, opts.CallTimeout, opts.MemoryLimit); err != nil {
		L.Close()
		return nil, err
	}
	L.SetContext(rt.budget)
	rt.clock = func() int64 { return time.Now().UnixMilli() }
	rt.rctx = newRecordContext(rt)
	L.SetGlobal("print", L.NewFunction(rt.luaPrint))
	return rt, nil
}

// DefaultMemoryLimit is the memory budget of the scripts' Lua data when Options names none.
const DefaultMemoryLimit = 256 << 20

// Close releases the Lua state.
func (rt *Runtime) Close() { rt.L.Close() }

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
	src, err := readSource(abs)
	if err != nil {
		return nil, fmt.Errorf("cannot read script: %w", err)
	}
	chunk, err := parseScript(src, name)
	if err != nil {
		return nil, err
	}
	rewriteConcat(chunk)
	rt.Warnings = append(rt.Warnings, rt.sandboxWarnings(name, chunk)...)
	proto, err := lua.Compile(chunk, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	fn := rt.L.NewFunctionFromProto(proto)
	fn.Env = rt.newEnv(filepath.Dir(abs))
	rt.files[name] = true
	return fn, nil
}

// requireFrom is the require of the files in dir. Each file gets its own copy of the stoat
// module, as of the standard libraries (newEnv).
func (rt *Runtime) requireFrom(dir string) lua.LGFunction {
	var stoat *lua.LTable
	return func(L *lua.LState) int {
		name := L.CheckString(1)
		if name == "stoat" {
			if stoat == nil {
				stoat = copyTable(L, rt.stoatModule(), map[*lua.LTable]*lua.LTable{})
			}
			L.Push(stoat)
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

// ScriptError is an error raised by Lua code, or a Lua call stopped by its time or memory
// budget. Message starts with the script's file:line and is at most maxErrorText bytes long.
type ScriptError struct {
	Message  string
	Timeout  bool   // stopped by the time budget (agent.lua.call.timeout)
	Memory   bool   // stopped by the memory budget (agent.lua.memory.max.bytes)
	Location string // file:line, when known
	// cause is the Go error a function of the runtime raised into Lua (a failed send, a
	// store's error, a downstream node's error) when that is what ended the call, so that
	// errors.Is and errors.As see it through the script: a fenced producer or a record too
	// large stays what it is instead of becoming a processing error.
	cause error
}

func (e *ScriptError) Error() string { return e.Message }

func (e *ScriptError) Unwrap() error { return e.cause }

// maxErrorText bounds the message of a ScriptError: a script can raise a string of any size,
// and the message goes into logs, metrics and dead-letter headers.
const maxErrorText = 4096

// pcall calls the function below nargs arguments on the stack under the budget.
func (rt *Runtime) pcall(nargs, nret int) error {
	fn, _ := rt.L.Get(-(nargs + 1)).(*lua.LFunction)
	rt.budget.begin(fn)
	outermost := rt.budget.depth == 1
	start := monoNow()
	outer := rt.nodes.enter()
	enclosing := rt.raised
	rt.raised = nil
	err := rt.L.PCall(nargs, nret, nil)
	raised := rt.raised
	rt.raised = enclosing
	took := monoNow() - start
	rt.nodes.leave(outer, took)
	if outermost {
		rt.luaTime += took
	}
	stopped := rt.budget.end()
	if err == nil {
		return nil
	}
	se := rt.scriptError(err, stopped, raised)
	if rt.opts.OnError != nil {
		rt.opts.OnError(rt.scriptOf(se.Location))
	}
	return se
}

// scriptError turns what a protected call returned into a ScriptError. raised is the last Go
// error the call raised into Lua: the error's cause when the error the call ended with is
// that one still (not one the script raised after catching it with pcall).
func (rt *Runtime) scriptError(err error, stopped *BudgetError, raised error) *ScriptError {
	se := &ScriptError{Message: err.Error()}
	var apiErr *lua.ApiError
	if errors.As(err, &apiErr) && apiErr.Object != nil {
		se.Message = rt.errorValueText(apiErr.Object, apiErr.StackTrace)
	}
	if raised != nil && stopped == nil && strings.HasSuffix(se.Message, raised.Error()) {
		se.cause = raised
	}
	se.Location = location(se.Message)
	if stopped != nil {
		se.Timeout, se.Memory = !stopped.Memory, stopped.Memory
		se.Message = se.Location + ": " + stopped.Text
	}
	se.Message = capText(se.Message, maxErrorText)
	return se
}

// errorValueText renders an error value. A string is the message as raised (error() and
// the runtime put file:line in front); anything else, and a string raised without a place
// (error(msg, 0)), gets the file:line of the innermost Lua frame of the traceback in front.
func (rt *Runtime) errorValueText(v lua.LValue, traceback string) string {
	if s, ok := v.(lua.LString); ok {
		if location(string(s)) != "<lua>" {
			return string(s)
		}
		return tracebackLocation(traceback) + ": " + string(s)
	}
	return tracebackLocation(traceback) + ": " + rt.renderErrorValue(v)
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// renderErrorValue renders an error value that is not a string: through its __tostring
// metamethod when it has one (run under its own budget), else as "error object" and a Lua
// table constructor a few levels and entries deep.
func (rt *Runtime) renderErrorValue(v lua.LValue) string {
	L := rt.L
	if fn, ok := L.GetMetaField(v, "__tostring").(*lua.LFunction); ok {
		L.Push(fn)
		L.Push(v)
		rt.budget.begin(fn)
		err := L.PCall(1, 1, nil)
		rt.budget.end()
		if err == nil {
			s := rt.pop()
			if str, ok := s.(lua.LString); ok {
				return string(str)
			}
		}
	}
	var b strings.Builder
	b.WriteString("error object ")
	writeErrorValue(&b, v, 2)
	return b.String()
}

// writeErrorValue writes v as Lua source would: strings quoted, tables as constructors of at
// most maxErrorEntries entries (array part first, then the other keys in order), depth
// levels deep.
func writeErrorValue(b *strings.Builder, v lua.LValue, depth int) {
	const maxErrorEntries, maxErrorString = 16, 200
	switch x := v.(type) {
	case lua.LString:
		b.WriteString(strconv.Quote(capText(string(x), maxErrorString)))
	case *lua.LTable:
		if depth == 0 {
			b.WriteString("{...}")
			return
		}
		n := x.Len()
		var keys []lua.LValue
		x.ForEach(func(k, _ lua.LValue) {
			if i, ok := k.(lua.LNumber); !ok || float64(i) < 1 || float64(i) > float64(n) || float64(i) != math.Trunc(float64(i)) {
				keys = append(keys, k)
			}
		})
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		b.WriteByte('{')
		total := n + len(keys)
		for i := range min(total, maxErrorEntries) {
			if i > 0 {
				b.WriteString(", ")
			}
			if i < n {
				writeErrorValue(b, x.RawGetInt(i+1), depth-1)
				continue
			}
			k := keys[i-n]
			if s, ok := k.(lua.LString); ok && identifier.MatchString(string(s)) {
				b.WriteString(string(s))
			} else {
				b.WriteByte('[')
				writeErrorValue(b, k, 0)
				b.WriteByte(']')
			}
			b.WriteString(" = ")
			writeErrorValue(b, x.RawGet(k), depth-1)
		}
		if total > maxErrorEntries {
			b.WriteString(", ...")
		}
		b.WriteByte('}')
	case lua.LNumber, lua.LBool, *lua.LNilType:
		b.WriteString(x.String())
	default:
		b.WriteString(v.Type().String())
	}
}

// tracebackLocation is the file:line of the innermost Lua frame of a gopher-lua traceback
// ("stack traceback:\n\t[G]: in function 'error'\n\tp.lua:4: in function <p.lua:3>...").
func tracebackLocation(traceback string) string {
	for line := range strings.SplitSeq(traceback, "\n") {
		if loc := location(strings.TrimSpace(line)); loc != "<lua>" {
			return loc
		}
	}
	return "<lua>"
}

// capText cuts s to at most n bytes (on a UTF-8 boundary), saying how long it was.
func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	suffix := fmt.Sprintf(" ... [cut: %d bytes in all]", len(s))
	cut := n - len(suffix)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + suffix
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

// scriptOf is the script file of a location, for the Lua error metric's label: one of the
// compiled files, or "<lua>", so that an error message cannot make up label values.
func (rt *Runtime) scriptOf(loc string) string {
	if i := strings.LastIndexByte(loc, ':'); i > 0 && rt.files[loc[:i]] {
		return loc[:i]
	}
	return "<lua>"
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
