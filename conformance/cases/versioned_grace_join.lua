local s = require("stoat")
local b = s.builder()

local function n(x) if x == nil then return "~" end return x end

local prices = b:table("prices", { materialized = { name = "prices", type = "versionedKeyValue", historyRetention = 500 } })
b:stream("orders")
  :leftJoin(prices, function(o, p) return o .. "@" .. n(p) end,
    { name = "graced", keySerde = "string", valueSerde = "string", gracePeriod = 40 })
  :to("out")

return b
