local s = require("stoat")
local b = s.builder()

-- Kafka hands null values to a time-windowed aggregator; Java's string concatenation writes
-- them "null".
local function str(v) if v == nil then return "null" end return v end

b:stream("in")
  :groupByKey()
  :windowedBy(s.TimeWindows.ofSizeAndGrace(100, 30):advanceBy(40))
  :aggregate(function() return "" end, function(_, v, agg) return agg .. "," .. str(v) end, { materialized = "hop" })
  :toStream(function(wk) return wk.key .. "@" .. wk.window.start .. "-" .. wk.window["end"] end)
  :to("out")

return b
