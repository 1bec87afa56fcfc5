package luart

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// testFile is one *_test.lua file: its own sandboxed Lua state with the stoat.test module,
// and the tests it registered while loading.
type testFile struct {
	rt      *Runtime
	name    string // display name, as errors name scripts
	dir     string // absolute directory; driver scripts are relative to it
	timeout time.Duration
	log     *slog.Logger
	stdout  io.Writer // KStream:print() of pipelines under test

	tests   []registeredTest
	running bool          // inside a test function, where t.test is refused
	drivers []*testDriver // open drivers; those a test opened are closed after it
	// scriptErr is why the scripts a driver of the running test loads did not load, if
	// that is why the test failed.
	scriptErr string

	failureMT, driverMT, inputMT, outputMT *lua.LTable
}

type registeredTest struct {
	name string
	fn   *lua.LFunction
}

// loadTestFile compiles and runs a test file, which registers its tests with t.test.
func loadTestFile(abs string, timeout time.Duration, log *slog.Logger, stdout io.Writer) (*testFile, *testFailure) {
	rt, err := New(Options{CallTimeout: timeout, Logger: log, Stdout: stdout})
	if err != nil {
		return nil, &testFailure{message: err.Error()}
	}
	tf := &testFile{rt: rt, name: displayName(abs), dir: filepath.Dir(abs), timeout: timeout, log: log, stdout: stdout}
	tf.initMetatables()
	fn, err := rt.compile(abs, tf.name)
	if err != nil {
		tf.close()
		return nil, &testFailure{message: err.Error()}
	}
	// The file's require also knows stoat.test; everything else goes to the runtime's require
	// (stoat, and modules below the test file's directory).
	env := fn.Env
	scriptRequire := env.RawGetString("require")
	env.RawSetString("require", rt.L.NewFunction(func(L *lua.LState) int {
		if L.CheckString(1) == "stoat.test" {
			L.Push(tf.module())
			return 1
		}
		L.Push(scriptRequire)
		L.Push(L.Get(1))
		L.Call(1, 1)
		return 1
	}))
	if f := tf.call(fn); f != nil {
		tf.close()
		return nil, f
	}
	return tf, nil
}

func (tf *testFile) initMetatables() {
	L := tf.rt.L
	tf.failureMT = L.NewTable()
	tf.failureMT.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		f, _ := L.CheckUserData(1).Value.(*testFailure)
		if f == nil {
			L.ArgError(1, "not a test failure")
		}
		L.Push(lua.LString(f.String()))
		return 1
	}))
	tf.driverMT = tf.rt.typeMetatable("TopologyTestDriver", tf.driverMethods())
	tf.inputMT = tf.rt.typeMetatable("TestInputTopic", tf.inputMethods())
	tf.outputMT = tf.rt.typeMetatable("TestOutputTopic", tf.outputMethods())
}

// module is the stoat.test table: t.test, t.driver and the assertions.
func (tf *testFile) module() *lua.LTable {
	L := tf.rt.L
	if mod, ok := L.GetField(L.Get(lua.RegistryIndex), "stoat.test").(*lua.LTable); ok {
		return mod
	}
	mod := L.NewTable()
	mod.RawSetString("test", L.NewFunction(tf.luaTest))
	mod.RawSetString("driver", L.NewFunction(tf.luaDriver))
	for name, fn := range tf.assertionFunctions() {
		mod.RawSetString(name, L.NewFunction(fn))
	}
	L.SetField(L.Get(lua.RegistryIndex), "stoat.test", mod)
	return mod
}

// luaTest implements t.test(name, fn): it registers a test; tests run after the file loaded.
func (tf *testFile) luaTest(L *lua.LState) int {
	name := L.CheckString(1)
	fn := L.CheckFunction(2)
	if tf.running {
		L.RaiseError("t.test must be called at the top level of the test file, not inside a test")
	}
	for _, t := range tf.tests {
		if t.name == name {
			L.RaiseError("there is already a test named %q in this file", name)
		}
	}
	tf.tests = append(tf.tests, registeredTest{name: name, fn: fn})
	return 0
}

// run runs one registered test and closes the drivers it left open.
func (tf *testFile) run(t registeredTest) *testFailure {
	open := len(tf.drivers)
	tf.running, tf.scriptErr = true, ""
	f := tf.call(t.fn)
	tf.running = false
	for _, d := range tf.drivers[open:] {
		d.close()
	}
	tf.drivers = tf.drivers[:open]
	return f
}

// call runs fn under the test's time budget and turns what it raised into a failure.
func (tf *testFile) call(fn *lua.LFunction) *testFailure {
	L := tf.rt.L
	top := L.GetTop()
	defer L.SetTop(top)
	L.Push(fn)
	tf.rt.budget.begin(fn)
	err := L.PCall(0, 0, nil)
	stopped := tf.rt.budget.end()
	switch {
	case err == nil:
		return nil
	case stopped != nil && !stopped.Memory:
		return &testFailure{message: fmt.Sprintf("%s: the test exceeded its time budget of %s of CPU time (stoatflow test -timeout)", location(err.Error()), tf.timeout)}
	case stopped != nil:
		return &testFailure{message: location(err.Error()) + ": " + stopped.Text}
	}
	var apiErr *lua.ApiError
	if errors.As(err, &apiErr) {
		if ud, ok := apiErr.Object.(*lua.LUserData); ok {
			if f, ok := ud.Value.(*testFailure); ok {
				return f
			}
		}
	}
	return &testFailure{message: errorText(err)}
}

// close closes every open driver and the file's Lua state.
func (tf *testFile) close() {
	for _, d := range tf.drivers {
		d.close()
	}
	tf.drivers = nil
	tf.rt.Close()
}
