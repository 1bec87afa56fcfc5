local s = require("stoat")
local b = s.builder()

b:stream("in")
  :groupByKey()
  :windowedBy(s.SlidingWindows.ofTimeDifferenceAndGrace(50, 10))
  :emitStrategy(s.EmitStrategy.onWindowClose())
  :count({ materialized = "slfinal" })
  :toStream(function(wk) return wk.key .. "@" .. wk.window.start end)
  :to("out", { valueSerde = "long" })

return b
