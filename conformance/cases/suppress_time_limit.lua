local s = require("stoat")
local b = s.builder()

b:stream("in")
  :groupByKey()
  :count({ materialized = "counted" })
  :suppress(s.Suppressed.untilTimeLimit(50, s.Suppressed.BufferConfig.maxRecords(3)):withName("limit"))
  :toStream()
  :to("out", { valueSerde = "long" })

return b
