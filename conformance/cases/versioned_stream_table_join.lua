local s = require("stoat")
local b = s.builder()

local prices = b:table("prices", { materialized = { name = "prices", type = "versionedKeyValue", historyRetention = 500 } })
b:stream("orders"):join(prices, function(o, p) return o .. "@" .. p end):to("out")

return b
