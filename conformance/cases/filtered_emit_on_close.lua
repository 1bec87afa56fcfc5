local s = require("stoat")
local b = s.builder()

-- A filter before a windowed aggregation over two topics: the records it drops (three
-- letters) and the null keys the aggregation drops move the watermark, not the
-- aggregation's stream time.
b:stream({ "a", "b" })
  :filter(function(_, v) return v == nil or #v ~= 3 end)
  :groupByKey()
  :windowedBy(s.TimeWindows.ofSizeAndGrace(100, 20))
  :emitStrategy(s.EmitStrategy.onWindowClose())
  :count({ materialized = "filtered" })
  :toStream(function(wk) return wk.key .. "@" .. wk.window.start end)
  :to("out", { valueSerde = "long" })

return b
