local s = require("stoat")
local b = s.builder()

b:table("in")
  :groupBy(function(k, v) return v, k end)
  :count({ materialized = "by-value" })
  :toStream()
  :to("out", { valueSerde = "long" })

return b
