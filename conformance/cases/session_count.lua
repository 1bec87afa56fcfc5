local s = require("stoat")
local b = s.builder()

b:stream("in")
  :groupBy(function(_, v) return v end)
  :windowedBy(s.SessionWindows.ofInactivityGapWithNoGrace(40))
  :count()
  :toStream(function(wk) return wk.key .. "@" .. wk.window.start .. "-" .. wk.window["end"] end)
  :to("out", { valueSerde = "long" })

return b
