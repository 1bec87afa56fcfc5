package luart

import (
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// testDriver is a TopologyTestDriver: the scripts under test loaded into a Lua state of
// their own (a test never shares Lua state with the pipeline) and run by a pipeline.Driver.
type testDriver struct {
	tf      *testFile
	rt      *Runtime
	d       *pipeline.Driver
	sources []string
	b       *pipeline.StreamsBuilder
	closed  bool
	// defaultKeySerde and defaultValueSerde are the serdes of test topics that name none.
	defaultKeySerde, defaultValueSerde string
	// schemas makes the Schema Registry serdes of the pipeline and of the test topics, on one
	// in-memory registry per driver.
	schemas *schemas.Factory
}

// luaDriver implements t.driver("script.lua") and t.driver{scripts = {...}, defaultKeySerde =,
// defaultValueSerde =, wallClockMs =, partitions = {[topic] = n}, deserializationExceptionHandler =,
// processingExceptionHandler =, deadLetterQueueTopic =}.
func (tf *testFile) luaDriver(L *lua.LState) int {
	var (
		scripts []string
		o       *lua.LTable
	)
	if s, ok := L.Get(1).(lua.LString); ok {
		scripts = []string{string(s)}
		o = L.NewTable()
	} else {
		o = options(L, 1, "t.driver", driverOpts)
		list, ok := o.RawGetString("scripts").(*lua.LTable)
		if !ok || list.Len() == 0 {
			L.RaiseError("t.driver needs a script path or {scripts = {\"a.lua\", ...}}")
		}
		for i := 1; i <= list.Len(); i++ {
			s, ok := list.RawGetInt(i).(lua.LString)
			if !ok {
				L.RaiseError("t.driver: scripts[%d] must be a path, not a %s", i, list.RawGetInt(i).Type())
			}
			scripts = append(scripts, string(s))
		}
	}
	for i, s := range scripts {
		if !filepath.IsAbs(s) {
			scripts[i] = filepath.Join(tf.dir, s)
		}
	}
	td := &testDriver{tf: tf, defaultKeySerde: optString(L, o, "defaultKeySerde"), defaultValueSerde: optString(L, o, "defaultValueSerde"),
		schemas: schemas.NewFactory(schemas.Config{Registry: schemas.NewMemoryRegistry(), AutoRegister: true})}
	if td.defaultKeySerde == "" {
		td.defaultKeySerde = "string"
	}
	if td.defaultValueSerde == "" {
		td.defaultValueSerde = "string"
	}
	dopts := pipeline.DriverOptions{Partitions: map[string]int32{}, Stores: pipeline.NewMemoryStores(), ApplicationID: "stoatflow-test"}
	switch ms := o.RawGetString("wallClockMs").(type) {
	case *lua.LNilType:
	case lua.LNumber:
		dopts.WallClockMs = checkMillis(L, "wallClockMs", ms)
	default:
		L.RaiseError("t.driver: wallClockMs must be a number, not a %s", ms.Type())
	}
	switch parts := o.RawGetString("partitions").(type) {
	case *lua.LNilType:
	case *lua.LTable:
		parts.ForEach(func(k, v lua.LValue) {
			n, ok := v.(lua.LNumber)
			if _, isName := k.(lua.LString); !isName || !ok || n < 1 || float64(n) != math.Trunc(float64(n)) || n > math.MaxInt32 {
				L.RaiseError("t.driver: partitions must map topic names to positive integers (at %s = %s)", k.String(), v.String())
			}
			dopts.Partitions[k.String()] = int32(n)
		})
	default:
		L.RaiseError("t.driver: partitions must be a table of topic = count, not a %s", parts.Type())
	}
	dopts.ExceptionHandlers = pipeline.ExceptionHandlers{
		ContinueOnDeserializationError: exceptionHandler(L, o, "deserializationExceptionHandler"),
		ContinueOnProcessingError:      exceptionHandler(L, o, "processingExceptionHandler"),
		DeadLetterQueueTopic:           optString(L, o, "deadLetterQueueTopic"),
	}
	if err := td.open(scripts, dopts); err != nil {
		var se *scriptLoadError
		if errors.As(err, &se) {
			tf.scriptErr = se.Error()
		}
		L.RaiseError("t.driver: %v", err)
	}
	tf.drivers = append(tf.drivers, td)
	ud := L.NewUserData()
	ud.Value = td
	L.SetMetatable(ud, tf.driverMT)
	L.Push(ud)
	return 1
}

// exceptionHandler reads an exception handler option of t.driver, the agent's
// deserialization.exception.handler or processing.exception.handler: whether it is
// LogAndContinue.
func exceptionHandler(L *lua.LState, o *lua.LTable, name string) bool {
	switch v := o.RawGetString(name); v {
	case lua.LNil, lua.LString("LogAndFail"):
		return false
	case lua.LString("LogAndContinue"):
		return true
	default:
		L.RaiseError("t.driver: %s must be \"LogAndFail\" or \"LogAndContinue\", not %s", name, v.String())
		return false
	}
}

// scriptLoadError is a driver's scripts failing to load.
type scriptLoadError struct{ err error }

func (e *scriptLoadError) Error() string { return e.err.Error() }
func (e *scriptLoadError) Unwrap() error { return e.err }

// open loads the scripts into a fresh runtime and builds the topology.
func (td *testDriver) open(scripts []string, opts pipeline.DriverOptions) error {
	rt, err := New(Options{
		DefaultKeySerde:   td.defaultKeySerde,
		DefaultValueSerde: td.defaultValueSerde,
		Logger:            td.tf.log,
		Stdout:            td.tf.stdout,
		Schemas:           td.schemas,
	})
	if err != nil {
		return err
	}
	b, err := rt.LoadScripts(scripts)
	if err != nil {
		rt.Close()
		return &scriptLoadError{err}
	}
	d, err := pipeline.NewDriver(b, opts)
	if err != nil {
		rt.Close()
		return err
	}
	rt.SetClock(d.WallClock)
	td.rt, td.d, td.sources, td.b = rt, d, b.SourceTopics(), b
	for _, g := range b.GlobalStores() {
		td.sources = append(td.sources, g.Topic)
	}
	return nil
}

// matched reports whether a pattern source reads topic.
func (td *testDriver) matched(topic string) bool {
	sub, err := td.b.Subscription([]string{topic})
	return err == nil && slices.Contains(sub, topic)
}

func (td *testDriver) close() {
	if !td.closed {
		td.closed = true
		td.rt.Close()
	}
}

// keyValueStore finds a key-value store of the topology under test by name. Input topics
// have one partition here, as in TopologyTestDriver, so the store is its partition 0. Values
// cross from the pipeline's Lua state to the test's as plain data.
func (td *testDriver) keyValueStore(name string) (lua.LValue, error) {
	s, err := td.d.Store(name, 0)
	if err != nil {
		return nil, err
	}
	trt := td.tf.rt
	L := trt.L
	methods := map[string]lua.LGFunction{
		"get": func(L *lua.LState) int {
			k, err := trt.fromLua(L.Get(2))
			if err != nil {
				L.RaiseError("get: key: %v", err)
			}
			v, ts, found, err := s.Get(k)
			if err != nil {
				L.RaiseError("get: %v", err)
			}
			if !found {
				L.Push(lua.LNil)
				return 1
			}
			L.Push(trt.toLua(v))
			L.Push(lua.LNumber(ts))
			return 2
		},
		"all": func(L *lua.LState) int {
			it, err := s.Range(nil, nil, false)
			if err != nil {
				L.RaiseError("all: %v", err)
			}
			defer it.Close()
			list := L.NewTable()
			for it.Next() {
				e := L.NewTable()
				e.RawSetString("key", trt.toLua(it.Key()))
				e.RawSetString("value", trt.toLua(it.Value()))
				list.Append(e)
			}
			if err := it.Err(); err != nil {
				L.RaiseError("all: %v", err)
			}
			L.Push(list)
			return 1
		},
		"approximateNumEntries": func(L *lua.LState) int {
			n, err := s.ApproximateNumEntries()
			if err != nil {
				L.RaiseError("approximateNumEntries: %v", err)
			}
			L.Push(lua.LNumber(n))
			return 1
		},
	}
	ud := L.NewUserData()
	ud.Value = s
	L.SetMetatable(ud, trt.typeMetatable("KeyValueStore", methods))
	return ud, nil
}

func checkMillis(L *lua.LState, what string, n lua.LNumber) int64 {
	f := float64(n)
	if f != math.Trunc(f) || math.Abs(f) > maxExactInt {
		L.RaiseError("%s must be milliseconds as an integer, not %v", what, f)
	}
	return int64(f)
}

// checkDuration reads a duration the test driver takes as the DSL reads one (durationMs):
// milliseconds or a string like "2s".
func checkDuration(L *lua.LState, what string, v lua.LValue) int64 {
	ms, err := durationMs(v)
	if err != nil {
		L.RaiseError("%s: %v", what, err)
	}
	return ms
}

// checkDriver returns the open driver a method was called on.
func (tf *testFile) checkDriver(L *lua.LState) *testDriver {
	if ud, ok := L.Get(1).(*lua.LUserData); ok {
		if td, ok := ud.Value.(*testDriver); ok {
			if td.closed {
				L.RaiseError("the TopologyTestDriver is closed")
			}
			return td
		}
	}
	L.RaiseError("call TopologyTestDriver methods with ':' (d:createInputTopic(...))")
	return nil
}

func (tf *testFile) driverMethods() map[string]lua.LGFunction {
	return map[string]lua.LGFunction{
		"createInputTopic": func(L *lua.LState) int {
			td := tf.checkDriver(L)
			topic := L.CheckString(2)
			if !slices.Contains(td.sources, topic) && !td.matched(topic) {
				L.RaiseError("createInputTopic: topic %q is not a source of this topology (sources: %s)", topic, strings.Join(td.sources, ", "))
			}
			ks, vs := tf.topicSerdes(L, td, "createInputTopic", 3)
			return tf.pushTopic(L, &testTopic{td: td, topic: topic, key: ks, value: vs}, tf.inputMT)
		},
		"createOutputTopic": func(L *lua.LState) int {
			td := tf.checkDriver(L)
			topic := L.CheckString(2)
			ks, vs := tf.topicSerdes(L, td, "createOutputTopic", 3)
			return tf.pushTopic(L, &testTopic{td: td, topic: topic, key: ks, value: vs}, tf.outputMT)
		},
		"advanceWallClockTime": func(L *lua.LState) int {
			td := tf.checkDriver(L)
			ms := checkDuration(L, "advanceWallClockTime", L.Get(2))
			if ms < 0 {
				L.RaiseError("advanceWallClockTime: the wall clock only moves forward (got %d ms)", ms)
			}
			if err := td.d.AdvanceWallClock(ms); err != nil {
				L.RaiseError("advanceWallClockTime: %v", err)
			}
			return 0
		},
		"getKeyValueStore": func(L *lua.LState) int {
			td := tf.checkDriver(L)
			store, err := td.keyValueStore(L.CheckString(2))
			if err != nil {
				L.RaiseError("getKeyValueStore: %v", err)
			}
			L.Push(store)
			return 1
		},
		"getWindowStore":            tf.driverStore("getWindowStore", (*testDriver).windowStore),
		"getTimestampedWindowStore": tf.driverStore("getTimestampedWindowStore", (*testDriver).windowStore),
		"getSessionStore":           tf.driverStore("getSessionStore", (*testDriver).sessionStore),
		"getVersionedKeyValueStore": tf.driverStore("getVersionedKeyValueStore", (*testDriver).versionedStore),
		"close": func(L *lua.LState) int {
			tf.checkDriver(L).close()
			return 0
		},
	}
}

// topicSerdes reads {keySerde =, valueSerde =} at index i. Serde names and Schema Registry
// serdes (stoat.avro{...}, plain data) are accepted: a stoat.serde{...} is made of functions
// of another Lua state.
func (tf *testFile) topicSerdes(L *lua.LState, td *testDriver, what string, i int) (key, value pipeline.Serde) {
	o := options(L, i, what, topicOpts)
	byName := func(opt, def string) pipeline.Serde {
		name := def
		var spec schemas.Spec
		switch v := o.RawGetString(opt).(type) {
		case *lua.LNilType:
		case lua.LString:
			name = string(v)
		case *lua.LUserData:
			if ws, ok := v.Value.(windowedSerde); ok && !wrapsLuaSerde(ws.Serde) {
				return ws.Serde
			}
			ss, ok := v.Value.(*schemaSerde)
			if !ok {
				L.RaiseError("%s: %s must be a serde name or a stoat.avro/protobuf/jsonSchema{...}; a test topic cannot take a stoat.serde{...}, whose functions live in the pipeline's Lua state: use \"bytes\" and decode in the test", what, opt)
			}
			name, spec = ss.name, ss.spec
		default:
			L.RaiseError("%s: %s must be a serde name (%s); a test topic cannot take a stoat.serde{...}, whose functions live in the pipeline's Lua state: use \"bytes\" and decode in the test", what, opt, strings.Join(serdes.Names(), ", "))
		}
		var s pipeline.Serde
		var err error
		if isSchemaSerdeName(name) {
			s, err = td.schemas.New(name, opt == "keySerde", spec)
		} else {
			s, err = serdes.ByName(name)
		}
		if err != nil {
			L.RaiseError("%s: %s: %v", what, opt, err)
		}
		return s
	}
	return byName("keySerde", td.defaultKeySerde), byName("valueSerde", td.defaultValueSerde)
}

// wrapsLuaSerde reports whether a windowed serde's inner serde is a stoat.serde{...}.
func wrapsLuaSerde(s pipeline.Serde) bool {
	switch w := s.(type) {
	case pipeline.TimeWindowedSerde:
		_, ok := w.Inner.(*luaSerde)
		return ok
	case pipeline.SessionWindowedSerde:
		_, ok := w.Inner.(*luaSerde)
		return ok
	}
	return false
}
