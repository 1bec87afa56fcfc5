local s = require("stoat")
local b = s.builder()

-- Short values group under no key: Kafka Streams sends nothing for them.
b:table("in")
  :groupBy(function(k, v) if #v > 3 then return v, k end return nil, k end)
  :count({ materialized = "by-value" })
  :toStream()
  :to("out", { valueSerde = "long" })

return b
