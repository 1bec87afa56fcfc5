package luart

import (
	"math"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

const cardAvsc = `{"type": "record", "name": "Card", "fields": [{"name": "number", "type": "string"}, {"name": "serial", "type": "long"}]}`

func TestSchemaSerdeNeedsARegistry(t *testing.T) {
	_, _, err := load(t, `local s = require("stoat")
local b = s.builder()
b:stream("in", { valueSerde = "avro" }):to("out")
return b`, nil)
	if err == nil || !strings.Contains(err.Error(), "pipeline.lua:3:") || !strings.Contains(err.Error(), "the avro serde needs a Schema Registry: set schema.registry.url") {
		t.Fatalf("error %v", err)
	}
}

func TestSchemaSerdeOptionErrors(t *testing.T) {
	for _, c := range []struct{ call, want string }{
		{`s.avro({ schema = "missing.avsc" })`, "stoat.avro: schema: stat "},
		{`s.avro({ schema = "/dev/zero" })`, "stoat.avro: schema: /dev/zero: not a regular file (a device)"},
		{`s.avro({ schema = "bad.avsc" })`, "bad.avsc: avro: unknown type"},
		{`s.avro({ message = "X" })`, `stoat.avro: unknown option "message"`},
		{`s.protobuf({ message = "X" })`, "needs a schema file"},
		{`s.avro({ version = 1.5 })`, "version must be a positive integer"},
		{`s.avro({ version = 2, latest = true })`, "give version or latest, not both"},
		{`s.jsonSchema({ schema = "bad.avsc" })`, "bad.avsc: the schema is not valid against metaschema"},
	} {
		_, _, err := load(t, "local s = require(\"stoat\")\nlocal x = "+c.call+"\nreturn s.builder()", map[string]string{"bad.avsc": `{"type": 7}`})
		if err == nil || !strings.Contains(err.Error(), "pipeline.lua:2:") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want pipeline.lua:2: ... %q", c.call, err, c.want)
		}
	}
}

// TestSchemaSerdesInTests: stoat test's in-memory registry serves Avro keys and values; a
// key serde registers under <topic>-key, and 64-bit values keep their precision.
func TestSchemaSerdesInTests(t *testing.T) {
	files := map[string]string{
		"card.avsc": cardAvsc,
		"cards.lua": `local s = require("stoat")
local b = s.builder()
local card = s.avro({ schema = "card.avsc" })
b:stream("in", { keySerde = card, valueSerde = "avro" })
  :mapValues(function(v) v.number = v.number .. "!" return v end)
  :to("out", { keySerde = card, valueSerde = card })
return b`,
		"cards_test.lua": `local t = require("stoat.test")
local s = require("stoat")
t.test("round trip", function()
  local d = t.driver("cards.lua")
  local card = s.avro({ schema = "card.avsc" })
  local input = d:createInputTopic("in", { keySerde = card, valueSerde = card })
  local out = d:createOutputTopic("out", { keySerde = "avro", valueSerde = "avro" })
  input:pipeInput({ number = "k", serial = 1 }, { number = "4111", serial = "9007199254740993" })
  t.assertEquals(out:readKeyValue(), { key = { number = "k", serial = 1 }, value = { number = "4111!", serial = "9007199254740993" } })
end)
t.test("a record the schema refuses is an error naming the field", function()
  local d = t.driver("cards.lua")
  local input = d:createInputTopic("in", { keySerde = "string", valueSerde = s.avro({ schema = "card.avsc" }) })
  local ok, err = pcall(function() input:pipeInput("k", { number = 5 }) end)
  t.assertFalse(ok)
  t.assertTrue(tostring(err):find("field number: cannot write", 1, true) ~= nil, tostring(err))
end)`,
	}
	_, passed, failed, out := runLuaTests(t, files, TestOptions{})
	if passed != 2 || failed != 0 {
		t.Fatalf("passed %d failed %d:\n%s", passed, failed, out)
	}
}

func TestUint64ToLua(t *testing.T) {
	rt, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if v := rt.toLua(uint64(42)); v != lua.LNumber(42) {
		t.Errorf("42: %v", v)
	}
	if v := rt.toLua(uint64(math.MaxUint64)); v != lua.LString("18446744073709551615") {
		t.Errorf("max uint64: %v (%s)", v, v.Type())
	}
}
