local s = require("stoat")
local b = s.builder()

b:stream("in")
  :groupByKey()
  :windowedBy(s.SessionWindows.ofInactivityGapAndGrace(25, 40))
  :aggregate(function() return "" end,
    function(_, v, agg) return agg .. "+" .. (v or "null") end,
    function(_, a1, a2) return a1 .. "|" .. a2 end,
    { materialized = "sagg" })
  :toStream(function(wk) return wk.key .. "@" .. wk.window.start .. "-" .. wk.window["end"] end)
  :to("out")

return b
