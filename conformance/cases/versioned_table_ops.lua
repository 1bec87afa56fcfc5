local s = require("stoat")
local b = s.builder()

b:table("prices", { materialized = { name = "vt", type = "versionedKeyValue", historyRetention = 200 } })
  :mapValues(function(v) return v:upper() end)
  :toStream()
  :to("out")

return b
