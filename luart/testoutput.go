package luart

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// outputRecord is a record read back from an output topic, deserialised into the test state.
type outputRecord struct {
	key, value lua.LValue
	rec        pipeline.OutputRecord
}

// read removes the oldest record of the topic; reading an empty topic is an error, as Kafka's
// NoSuchElementException.
func (tf *testFile) read(L *lua.LState, t *testTopic, what string) outputRecord {
	rec, ok := t.td.d.ReadOutput(t.topic)
	if !ok {
		L.RaiseError("%s: no more records in topic %s", what, t.topic)
	}
	return tf.decode(L, t, what, rec)
}

func (tf *testFile) decode(L *lua.LState, t *testTopic, what string, rec pipeline.OutputRecord) outputRecord {
	key, err := t.key.Deserialize(t.topic, rec.Headers, rec.Key)
	if err != nil {
		L.RaiseError("%s: topic %s: cannot deserialize key with %s: %v", what, t.topic, t.key.Name(), err)
	}
	value, err := t.value.Deserialize(t.topic, rec.Headers, rec.Value)
	if err != nil {
		L.RaiseError("%s: topic %s: cannot deserialize value with %s: %v", what, t.topic, t.value.Name(), err)
	}
	return outputRecord{key: tf.rt.toLua(key), value: tf.rt.toLua(value), rec: rec}
}

// readAll removes and decodes every record of the topic.
func (tf *testFile) readAll(L *lua.LState, t *testTopic, what string) []outputRecord {
	var out []outputRecord
	for {
		rec, ok := t.td.d.ReadOutput(t.topic)
		if !ok {
			return out
		}
		out = append(out, tf.decode(L, t, what, rec))
	}
}

func (tf *testFile) keyValueTable(L *lua.LState, r outputRecord) *lua.LTable {
	t := L.CreateTable(0, 2)
	t.RawSetString("key", r.key)
	t.RawSetString("value", r.value)
	return t
}

func (tf *testFile) recordTable(L *lua.LState, r outputRecord) *lua.LTable {
	t := L.CreateTable(0, 5)
	t.RawSetString("key", r.key)
	t.RawSetString("value", r.value)
	t.RawSetString("timestamp", lua.LNumber(r.rec.Timestamp))
	t.RawSetString("partition", lua.LNumber(r.rec.Partition))
	t.RawSetString("headers", tf.rt.headersTable(r.rec.Headers))
	return t
}

// orNull keeps a tombstone's place in a list or map, where nil would leave a hole.
func (tf *testFile) orNull(v lua.LValue) lua.LValue {
	if v == lua.LNil {
		return tf.rt.null
	}
	return v
}

func (tf *testFile) outputMethods() map[string]lua.LGFunction {
	list := func(what string, item func(L *lua.LState, r outputRecord) lua.LValue) lua.LGFunction {
		return func(L *lua.LState) int {
			t := tf.checkTopic(L, tf.outputMT, "TestOutputTopic")
			recs := tf.readAll(L, t, what)
			out := L.CreateTable(len(recs), 0)
			for _, r := range recs {
				out.Append(item(L, r))
			}
			L.Push(out)
			return 1
		}
	}
	return map[string]lua.LGFunction{
		"readValue": func(L *lua.LState) int {
			L.Push(tf.read(L, tf.checkTopic(L, tf.outputMT, "TestOutputTopic"), "readValue").value)
			return 1
		},
		"readKeyValue": func(L *lua.LState) int {
			L.Push(tf.keyValueTable(L, tf.read(L, tf.checkTopic(L, tf.outputMT, "TestOutputTopic"), "readKeyValue")))
			return 1
		},
		"readRecord": func(L *lua.LState) int {
			L.Push(tf.recordTable(L, tf.read(L, tf.checkTopic(L, tf.outputMT, "TestOutputTopic"), "readRecord")))
			return 1
		},
		"readValuesToList": list("readValuesToList", func(_ *lua.LState, r outputRecord) lua.LValue {
			return tf.orNull(r.value)
		}),
		"readKeyValuesToList": list("readKeyValuesToList", func(L *lua.LState, r outputRecord) lua.LValue {
			return tf.keyValueTable(L, r)
		}),
		"readRecordsToList": list("readRecordsToList", func(L *lua.LState, r outputRecord) lua.LValue {
			return tf.recordTable(L, r)
		}),
		// readKeyValuesToMap keeps the last value of each key; a tombstone's key maps to
		// stoat.null, as Java's map holds key → null.
		"readKeyValuesToMap": func(L *lua.LState) int {
			t := tf.checkTopic(L, tf.outputMT, "TestOutputTopic")
			out := L.NewTable()
			for _, r := range tf.readAll(L, t, "readKeyValuesToMap") {
				switch r.key.(type) {
				case lua.LString, lua.LNumber, lua.LBool:
				case *lua.LNilType:
					L.RaiseError("readKeyValuesToMap: topic %s has a record with a null key (use readKeyValuesToList)", t.topic)
				default:
					L.RaiseError("readKeyValuesToMap: topic %s has a %s key, which cannot be a map key (use readKeyValuesToList)", t.topic, r.key.Type())
				}
				out.RawSet(r.key, tf.orNull(r.value))
			}
			L.Push(out)
			return 1
		},
		"isEmpty": func(L *lua.LState) int {
			t := tf.checkTopic(L, tf.outputMT, "TestOutputTopic")
			L.Push(lua.LBool(t.td.d.Pending(t.topic) == 0))
			return 1
		},
		"getQueueSize": func(L *lua.LState) int {
			t := tf.checkTopic(L, tf.outputMT, "TestOutputTopic")
			L.Push(lua.LNumber(t.td.d.Pending(t.topic)))
			return 1
		},
	}
}
