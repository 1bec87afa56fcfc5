local s = require("stoat")
local b = s.builder()

b:stream("in")
  :groupByKey()
  :count({ materialized = { name = "vcount", type = "versionedKeyValue", historyRetention = 1000 } })
  :toStream()
  :to("out", { valueSerde = "long" })

return b
