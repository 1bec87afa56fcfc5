local s = require("stoat")
local b = s.builder()

b:stream("in")
  :selectKey(function(_, v) return v end)
  :repartition({ name = "rp" })
  :groupByKey()
  :count({ materialized = "counts" })
  :toStream()
  :to("out", { valueSerde = "long" })

return b
