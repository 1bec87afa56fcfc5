local s = require("stoat")
local b = s.builder()

b:stream("in")
  :groupBy(function(_, v) return v end)
  :windowedBy(s.TimeWindows.ofSizeWithNoGrace(60))
  :reduce(function(agg, v) return agg .. #v end)
  :toStream(function(wk) return wk.key .. "@" .. wk.window.start end)
  :to("out")

return b
