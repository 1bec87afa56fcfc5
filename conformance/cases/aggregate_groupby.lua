local s = require("stoat")
local b = s.builder()

b:stream("in")
  :groupBy(function(_, v) if v == nil then return nil end return v:sub(1, 1) end, { name = "by-first" })
  :aggregate(function() return 0 end, function(_, v, agg) return agg + #v end,
    { materialized = { name = "lens", valueSerde = "long" } })
  :toStream()
  :to("out", { valueSerde = "long" })

return b
