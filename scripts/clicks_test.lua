-- Tests of clicks.lua: run them with `bin/stoatflow test` (docs/testing.md).
local t = require("stoat.test")

local function setup()
  local d = t.driver("clicks.lua")
  return d, d:createInputTopic("clicks"), d:createInputTopic("prices", { valueSerde = "long" }),
    d:createOutputTopic("clicks-per-minute", { valueSerde = "long" })
end

t.test("counts the clicks of each user per minute", function()
  local _, clicks, _, out = setup()
  clicks:pipeInput("alice", "stoat", { timestamp = 60000 })
  clicks:pipeInput("alice", "otter", { timestamp = 119999 })
  clicks:pipeInput("bob", "stoat", { timestamp = 61000 })
  clicks:pipeInput("alice", "stoat", { timestamp = 120000 })
  t.assertEquals(out:readKeyValuesToList(), {
    { key = "alice@60000", value = 1 },
    { key = "alice@60000", value = 2 },
    { key = "bob@60000", value = 1 },
    { key = "alice@120000", value = 1 },
  })
end)

t.test("keeps the count in the clicks-per-minute window store", function()
  local d, clicks = setup()
  clicks:pipeValueList({ "stoat", "otter" }, { timestamp = 60000 })
  clicks:pipeInput("alice", "stoat", { timestamp = 60500 })
  local windows = d:getWindowStore("clicks-per-minute"):fetch("alice", 0, 120000)
  t.assertEquals(#windows, 1)
  t.assertEquals(windows[1].value, 1)
end)

t.test("counts each user's visits: clicks less than 30 s apart", function()
  local d, clicks = setup()
  local visits = d:getSessionStore("visits")
  clicks:pipeInput("alice", "stoat", { timestamp = 0 })
  clicks:pipeInput("alice", "otter", { timestamp = 20000 })
  clicks:pipeInput("bob", "stoat", { timestamp = 40000 })
  t.assertEquals(visits:fetch("alice"), {
    { key = { key = "alice", window = { start = 0, ["end"] = 20000 } }, value = 2 },
  })
  -- 35 s after her last click: a new visit, and no click can join the first any more.
  clicks:pipeInput("alice", "stoat", { timestamp = 55000 })
  t.assertEquals(visits:fetch("alice"), {
    { key = { key = "alice", window = { start = 55000, ["end"] = 55000 } }, value = 1 },
  })
end)

t.test("keeps every price of an item as a version", function()
  local d, _, prices = setup()
  prices:pipeInput("stoat", 1200, { timestamp = 1000 })
  prices:pipeInput("stoat", 1250, { timestamp = 5000 })
  local store = d:getVersionedKeyValueStore("prices")
  t.assertEquals({ store:get("stoat") }, { 1250, 5000 })
  t.assertEquals({ store:get("stoat", 4999) }, { 1200, 1000, 5000 })
end)
