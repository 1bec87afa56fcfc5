local s = require("stoat")
local b = s.builder()

b:stream("in")
  :groupByKey()
  :windowedBy(s.SessionWindows.ofInactivityGapAndGrace(30, 10))
  :emitStrategy(s.EmitStrategy.onWindowClose())
  :count({ materialized = "sfinal" })
  :toStream(function(wk) return wk.key .. "@" .. wk.window.start .. "-" .. wk.window["end"] end)
  :to("out", { valueSerde = "long" })

return b
