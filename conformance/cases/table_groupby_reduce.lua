local s = require("stoat")
local b = s.builder()

b:table("nums", { keySerde = "string", valueSerde = "long" })
  :groupBy(function(k, v) if k < "c" then return "low", v end return "high", v end,
    { keySerde = "string", valueSerde = "long" })
  :reduce(function(agg, v) return agg + v end, function(agg, v) return agg - v end, { materialized = "sums" })
  :toStream()
  :to("out", { valueSerde = "long" })

return b
