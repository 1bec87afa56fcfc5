local s = require("stoat")
local b = s.builder()

local g1 = b:stream("a"):groupByKey()
local g2 = b:stream("b"):groupBy(function(_, v) return v end)
g1:cogroup(function(_, v, agg) return agg .. "a" .. (v or "null") end)
  :cogroup(g2, function(k, _, agg) return agg .. "b" .. k end)
  :windowedBy(s.TimeWindows.ofSizeAndGrace(100, 50))
  :aggregate(function() return "" end, { materialized = "cgw" })
  :toStream(function(wk) return wk.key .. "@" .. wk.window.start end)
  :to("out")

return b
