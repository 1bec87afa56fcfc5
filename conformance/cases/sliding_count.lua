local s = require("stoat")
local b = s.builder()

b:stream("in")
  :groupByKey()
  :windowedBy(s.SlidingWindows.ofTimeDifferenceAndGrace(50, 20))
  :count({ materialized = "sliding" })
  :toStream(function(wk) return wk.key .. "@" .. wk.window.start .. "-" .. wk.window["end"] end)
  :to("out", { valueSerde = "long" })

return b
