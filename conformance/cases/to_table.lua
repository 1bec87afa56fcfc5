local s = require("stoat")
local b = s.builder()

b:stream("in")
  :mapValues(function(v) if v == nil then return nil end return v:upper() end)
  :toTable({ materialized = "tt" })
  :toStream()
  :to("out")

return b
