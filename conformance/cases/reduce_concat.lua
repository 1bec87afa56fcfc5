local s = require("stoat")
local b = s.builder()

b:stream("in")
  :groupByKey()
  :reduce(function(agg, v) return agg .. "," .. v end, { materialized = "reduced" })
  :toStream()
  :to("out")

return b
