local s = require("stoat")
local b = s.builder()

b:stream("in")
  :groupByKey()
  :windowedBy(s.TimeWindows.ofSizeAndGrace(100, 50))
  :count({ materialized = "tw" })
  :toStream()
  :to("out", { keySerde = s.WindowedSerdes.timeWindowedSerdeFrom("string", 100), valueSerde = "long" })

return b
