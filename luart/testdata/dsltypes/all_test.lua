-- One of every stoat.test type: luals_test.go compares their methods with dsl_types.go.
local t = require("stoat.test")

t.test("every type", function()
  local d = t.driver("all.lua")
  d:createInputTopic("in"):pipeInput("k", "v")
  d:createOutputTopic("out"):isEmpty()
  d:getKeyValueStore("kv"):all()
  d:getWindowStore("win"):all()
  d:getSessionStore("ses"):fetch("k")
  d:getVersionedKeyValueStore("ver"):get("k")
end)
