local s = require("stoat")
local b = s.builder()

b:table("in", { materialized = "src" })
  :filter(function(_, v) return #v ~= 3 end)
  :mapValues(function(k, v) return k .. "=" .. v:upper() end, { withKey = true })
  :toStream()
  :mapValues(function(v) if v == nil then return "~" end return v end)
  :to("out")

return b
