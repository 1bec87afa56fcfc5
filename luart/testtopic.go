package luart

import (
	"math"
	"slices"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// testTopic is a TestInputTopic or TestOutputTopic: a topic of the driver with the serdes the
// test reads and writes it with.
type testTopic struct {
	td         *testDriver
	topic      string
	key, value pipeline.Serde
	// advanced is how far advanceTime moved the input topic's time ahead of the driver's
	// wall clock, which records piped without a timestamp are stamped with.
	advanced int64
}

func (tf *testFile) pushTopic(L *lua.LState, t *testTopic, mt *lua.LTable) int {
	ud := L.NewUserData()
	ud.Value = t
	L.SetMetatable(ud, mt)
	L.Push(ud)
	return 1
}

func (tf *testFile) checkTopic(L *lua.LState, mt *lua.LTable, typeName string) *testTopic {
	if ud, ok := L.Get(1).(*lua.LUserData); ok && ud.Metatable == mt {
		t := ud.Value.(*testTopic)
		if t.td.closed {
			L.RaiseError("the TopologyTestDriver of topic %s is closed", t.topic)
		}
		return t
	}
	L.RaiseError("call %s methods with ':' (topic:method(...))", typeName)
	return nil
}

// inputRecord is what the test pipes: a Lua key and value plus the record's metadata.
type inputRecord struct {
	key, value lua.LValue
	timestamp  int64
	headers    pipeline.Headers
}

func (tf *testFile) inputMethods() map[string]lua.LGFunction {
	return map[string]lua.LGFunction{
		// pipeInput(key, value [, opts]) or pipeInput(value).
		"pipeInput": func(L *lua.LState) int {
			t := tf.checkTopic(L, tf.inputMT, "TestInputTopic")
			rec := inputRecord{key: lua.LNil, value: L.Get(2)}
			if L.GetTop() >= 3 {
				rec.key, rec.value = L.Get(2), L.Get(3)
			}
			o := tf.pipeOptions(L, t, 4, false)
			rec.timestamp, rec.headers = o.timestamp, o.headers
			tf.pipe(L, t, rec)
			return 0
		},
		// pipeKeyValueList({{k, v} or {key =, value =}, ...} [, opts]).
		"pipeKeyValueList": func(L *lua.LState) int {
			t := tf.checkTopic(L, tf.inputMT, "TestInputTopic")
			list := L.CheckTable(2)
			o := tf.pipeOptions(L, t, 3, true)
			for i := 1; i <= list.Len(); i++ {
				pair, ok := list.RawGetInt(i).(*lua.LTable)
				if !ok {
					L.RaiseError("pipeKeyValueList: entry [%d] must be a {key, value} pair, not a %s", i, list.RawGetInt(i).Type())
				}
				rec := inputRecord{key: pair.RawGetInt(1), value: pair.RawGetInt(2), timestamp: o.at(i), headers: o.headers}
				if k, v := pair.RawGetString("key"), pair.RawGetString("value"); k != lua.LNil || v != lua.LNil {
					rec.key, rec.value = k, v
				}
				tf.pipe(L, t, rec)
			}
			return 0
		},
		// advanceTime(d) moves the time of the records piped without a timestamp forward, as
		// Kafka's TestInputTopic.advanceTime does.
		"advanceTime": func(L *lua.LState) int {
			t := tf.checkTopic(L, tf.inputMT, "TestInputTopic")
			d := checkDuration(L, "advanceTime", L.Get(2))
			if d < 0 {
				L.RaiseError("advanceTime: the time only moves forward (got %d ms)", d)
			}
			if t.advanced > math.MaxInt64-d {
				L.RaiseError("advanceTime: the topic's time would pass 2^63 - 1 ms")
			}
			t.advanced += d
			return 0
		},
		// pipeValueList({v, ...} [, opts]): values with null keys.
		"pipeValueList": func(L *lua.LState) int {
			t := tf.checkTopic(L, tf.inputMT, "TestInputTopic")
			list := L.CheckTable(2)
			o := tf.pipeOptions(L, t, 3, true)
			for i := 1; i <= list.Len(); i++ {
				tf.pipe(L, t, inputRecord{key: lua.LNil, value: list.RawGetInt(i), timestamp: o.at(i), headers: o.headers})
			}
			return 0
		},
	}
}

// pipeOpts are the options of the pipe methods. advance is the milliseconds between the
// records of a list, as in TestInputTopic's pipe*List(list, startTimestamp, advance).
type pipeOpts struct {
	timestamp, advance int64
	headers            pipeline.Headers
}

// at is the timestamp of the i-th (1-based) record of a list.
func (o pipeOpts) at(i int) int64 { return o.timestamp + int64(i-1)*o.advance }

// pipeOptions reads {timestamp =, headers =} (and advance = for lists). The timestamp
// defaults to the driver's wall clock, as in TopologyTestDriver, plus what advanceTime added.
func (tf *testFile) pipeOptions(L *lua.LState, t *testTopic, i int, list bool) pipeOpts {
	set := pipeInputOpts
	if list {
		set = pipeListInputOpts
	}
	o := options(L, i, "pipe options", set)
	p := pipeOpts{timestamp: t.td.d.WallClock() + t.advanced}
	if n, ok := o.RawGetString("timestamp").(lua.LNumber); ok {
		p.timestamp = checkMillis(L, "timestamp", n)
	} else if v := o.RawGetString("timestamp"); v != lua.LNil {
		L.RaiseError("timestamp must be milliseconds, not a %s", v.Type())
	}
	if v := o.RawGetString("advance"); v != lua.LNil {
		p.advance = checkDuration(L, "advance", v)
	}
	p.headers = tf.headers(L, o.RawGetString("headers"))
	return p
}

// headers reads a name → value table, or a list of {key =, value =} for repeated names.
// Values are strings; stoat.null is a header without a value.
func (tf *testFile) headers(L *lua.LState, v lua.LValue) pipeline.Headers {
	if v == lua.LNil {
		return nil
	}
	t, ok := v.(*lua.LTable)
	if !ok {
		L.RaiseError("headers must be a table of name = value or a list of {key =, value =}, not a %s", v.Type())
	}
	value := func(name string, v lua.LValue) []byte {
		switch x := v.(type) {
		case lua.LString:
			return []byte(x)
		case *lua.LNilType:
			return nil
		case *lua.LUserData:
			if x == tf.rt.null {
				return nil
			}
		}
		L.RaiseError("header %s: the value must be a string or stoat.null, not a %s", name, v.Type())
		return nil
	}
	var out pipeline.Headers
	if n := t.Len(); n > 0 {
		for i := 1; i <= n; i++ {
			e, ok := t.RawGetInt(i).(*lua.LTable)
			if !ok {
				L.RaiseError("headers[%d] must be {key = name, value = value}, not a %s", i, t.RawGetInt(i).Type())
			}
			name, ok := e.RawGetString("key").(lua.LString)
			if !ok {
				L.RaiseError("headers[%d]: key must be a header name", i)
			}
			out = append(out, pipeline.Header{Key: string(name), Value: value(string(name), e.RawGetString("value"))})
		}
		return out
	}
	t.ForEach(func(k, v lua.LValue) {
		name, ok := k.(lua.LString)
		if !ok {
			L.RaiseError("header names must be strings, not a %s", k.Type())
		}
		out = append(out, pipeline.Header{Key: string(name), Value: value(string(name), v)})
	})
	// A Lua table has no order: name order keeps the piped records deterministic.
	slices.SortFunc(out, func(a, b pipeline.Header) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// pipe serialises rec with the topic's serdes and runs it through the topology; a processing
// error is raised at the test line that piped the record.
func (tf *testFile) pipe(L *lua.LState, t *testTopic, rec inputRecord) {
	key, err := tf.rt.fromLua(rec.key)
	if err != nil {
		L.RaiseError("pipe to %s: key: %v", t.topic, err)
	}
	value, err := tf.rt.fromLua(rec.value)
	if err != nil {
		L.RaiseError("pipe to %s: value: %v", t.topic, err)
	}
	kb, err := t.key.Serialize(t.topic, rec.headers, key)
	if err != nil {
		L.RaiseError("pipe to %s: key: %v", t.topic, err)
	}
	vb, err := t.value.Serialize(t.topic, rec.headers, value)
	if err != nil {
		L.RaiseError("pipe to %s: value: %v", t.topic, err)
	}
	if err := t.td.d.Pipe(t.topic, kb, vb, rec.timestamp, rec.headers); err != nil {
		L.RaiseError("%v", err)
	}
}
