local s = require("stoat")
local b = s.builder()

b:stream("in")
  :mapValues(function(v)
    if v == "boom" then error("boom") end
    if v == nil then return "~" end
    return v
  end)
  :groupByKey()
  :reduce(function(agg, v)
    if v == "boom2" then error("boom2") end
    return agg .. "+" .. v
  end, { materialized = "joined" })
  :toStream()
  :to("out")

return b
