local s = require("stoat")
local b = s.builder()

-- Kafka hands null values to a time-windowed aggregator; Java's string concatenation writes
-- them "null".
local function str(v) if v == nil then return "null" end return v end

local g1 = b:stream("a"):groupByKey()
local g2 = b:stream("b"):groupBy(function(_, v) return v end)
g1:cogroup(function(_, v, agg) return agg .. "a" .. str(v) end)
  :cogroup(g2, function(k, _, agg) return agg .. "b" .. k end)
  :windowedBy(s.TimeWindows.ofSizeAndGrace(100, 50))
  :aggregate(function() return "" end, { materialized = "cgw" })
  :toStream(function(wk) return wk.key .. "@" .. wk.window.start end)
  :to("out")

return b
