local s = require("stoat")
local b = s.builder()

b:stream("in", { keySerde = "string", valueSerde = "long" })
  :mapValues(function(v) if v == nil then return nil end return v * 2 - 1 end)
  :filter(function(_, v) return v == nil or v % 3 ~= 0 end)
  :to("out", { valueSerde = "long" })

return b
