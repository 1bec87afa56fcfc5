local s = require("stoat")
local b = s.builder()

b:stream("in", { keySerde = "string", valueSerde = "string" })
  :mapValues(function(v) if v == nil then return nil end return "<" .. v .. ">" end)
  :to("out")

return b
