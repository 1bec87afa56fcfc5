local s = require("stoat")
local b = s.builder()

local g1 = b:stream("a"):groupByKey()
local g2 = b:stream("b"):groupByKey()
g1:cogroup(function(_, v, agg) return agg .. "a" .. v end)
  :cogroup(g2, function(_, v, agg) return agg .. "b" .. v end)
  :aggregate(function() return "" end, { materialized = "cg" })
  :toStream()
  :to("out")

return b
