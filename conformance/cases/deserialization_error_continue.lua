local s = require("stoat")
local b = s.builder()

b:stream("in", { keySerde = "string", valueSerde = "long" })
  :groupByKey()
  :reduce(function(a, v) return a + v end)
  :toStream()
  :to("out", { valueSerde = "long" })

return b
