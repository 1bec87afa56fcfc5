local s = require("stoat")
local b = s.builder()

b:table("in", { materialized = "source" })
  :groupBy(function(k, v) if #v > 4 then return "long", k end return "short", k end)
  :aggregate(function() return "" end,
    function(_, v, agg) return agg .. "+" .. v end,
    function(_, v, agg) return agg .. "-" .. v end,
    { materialized = "agg" })
  :toStream()
  :to("out")

return b
