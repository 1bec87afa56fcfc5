local s = require("stoat")
local b = s.builder()

b:stream("in")
  :groupByKey()
  :windowedBy(s.TimeWindows.ofSizeAndGrace(100, 20))
  :count({ materialized = "counted" })
  :suppress(s.Suppressed.untilWindowCloses(s.Suppressed.BufferConfig.unbounded()))
  :toStream(function(wk) return wk.key .. "@" .. wk.window.start end)
  :to("out", { valueSerde = "long" })

return b
