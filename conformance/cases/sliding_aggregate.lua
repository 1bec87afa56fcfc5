local s = require("stoat")
local b = s.builder()

b:stream("in")
  :groupByKey()
  :windowedBy(s.SlidingWindows.ofTimeDifferenceWithNoGrace(40))
  :aggregate(function() return "" end, function(_, v, agg) return agg .. #v end, { materialized = "slagg" })
  :toStream(function(wk) return wk.key .. "@" .. wk.window.start end)
  :to("out")

return b
