-- Tests of shout.lua: run them with `bin/stoatflow test` (docs/testing.md).
local t = require("stoat.test")

local function setup(opts)
  local d = t.driver(opts or "shout.lua")
  return d, d:createInputTopic("text-lines"), d:createOutputTopic("words")
end

t.test("splits lines into words, keeps the long ones, keys them by first letter", function()
  local _, input, out = setup()
  input:pipeInput("line-1", "The quick brown fox")
  t.assertEquals(out:readKeyValuesToList(), {
    { key = "q", value = "QUICK (from text-lines-0@0)" },
    { key = "b", value = "BROWN (from text-lines-0@0)" },
  })
end)

t.test("ignores case, punctuation and digits", function()
  local _, input, out = setup()
  input:pipeInput("Hello, WORLD... 2024 times!")
  t.assertEquals(out:readValuesToList(), {
    "HELLO (from text-lines-0@0)",
    "WORLD (from text-lines-0@0)",
    "TIMES (from text-lines-0@0)",
  })
end)

t.test("drops words of three letters or fewer", function()
  local _, input, out = setup()
  input:pipeValueList({ "a be cat", "", "dogs" })
  t.assertEquals(out:getQueueSize(), 1)
  t.assertEquals(out:readKeyValue(), { key = "d", value = "DOGS (from text-lines-0@2)" })
  t.assertTrue(out:isEmpty())
end)

t.test("the record context names the offset of each input line", function()
  local _, input, out = setup()
  input:pipeKeyValueList({ { "k1", "first" }, { "k2", "second" }, { "k3", "third" } })
  t.assertEquals(out:readValuesToList(), {
    "FIRST (from text-lines-0@0)",
    "SECOND (from text-lines-0@1)",
    "THIRD (from text-lines-0@2)",
  })
end)

t.test("a later word replaces an earlier one with the same key", function()
  local _, input, out = setup()
  input:pipeInput("apple avocado banana")
  t.assertEquals(out:readKeyValuesToMap(), {
    a = "AVOCADO (from text-lines-0@0)",
    b = "BANANA (from text-lines-0@0)",
  })
end)

t.test("headers and timestamp travel from the line to every word", function()
  local _, input, out = setup()
  input:pipeInput("k", "jumps over", { timestamp = 1234, headers = { trace = "abc-1" } })
  local rec = out:readRecord()
  t.assertEquals(rec.key, "j")
  t.assertEquals(rec.value, "JUMPS (from text-lines-0@0)")
  t.assertEquals(rec.timestamp, 1234)
  t.assertEquals(rec.headers, { trace = "abc-1" })
  t.assertEquals(out:readRecord().headers, { trace = "abc-1" })
end)

t.test("records without a timestamp get the driver's wall clock", function()
  local d, input, out = setup({ scripts = { "shout.lua" }, wallClockMs = 5000 })
  d:advanceWallClockTime(250)
  input:pipeInput("stoats")
  t.assertEquals(out:readRecord().timestamp, 5250)
end)

t.test("words are partitioned by their key, as Kafka's producer does", function()
  local _, input, out = setup({ scripts = { "shout.lua" }, partitions = { words = 3 } })
  input:pipeInput("quick quiet brown")
  local parts = {}
  for _, rec in ipairs(out:readRecordsToList()) do parts[rec.key .. ":" .. rec.value:match("%a+")] = rec.partition end
  -- murmur2("q") % 3 = 0 and murmur2("b") % 3 = 2
  t.assertEquals(parts, { ["q:QUICK"] = 0, ["q:QUIET"] = 0, ["b:BROWN"] = 2 })
end)

t.test("reading past the last word is an error", function()
  local _, input, out = setup()
  input:pipeInput("tiny")
  out:readValue()
  t.assertError(function() out:readValue() end, "no more records in topic words")
end)
