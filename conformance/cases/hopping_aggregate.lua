local s = require("stoat")
local b = s.builder()

b:stream("in")
  :groupByKey()
  :windowedBy(s.TimeWindows.ofSizeAndGrace(100, 30):advanceBy(40))
  :aggregate(function() return "" end, function(_, v, agg) return agg .. "," .. (v or "null") end, { materialized = "hop" })
  :toStream(function(wk) return wk.key .. "@" .. wk.window.start .. "-" .. wk.window["end"] end)
  :to("out")

return b
