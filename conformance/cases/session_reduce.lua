local s = require("stoat")
local b = s.builder()

b:stream("in")
  :groupByKey()
  :windowedBy(s.SessionWindows.ofInactivityGapAndGrace(30, 20))
  :reduce(function(agg, v) return (agg or "null") .. "," .. (v or "null") end, { materialized = "sessions" })
  :toStream()
  :to("out", { keySerde = s.WindowedSerdes.sessionWindowedSerdeFrom("string"), valueSerde = "string" })

return b
