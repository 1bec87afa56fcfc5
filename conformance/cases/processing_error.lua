local s = require("stoat")
local b = s.builder()

b:stream("in")
  :mapValues(function(v)
    if v == "boom" then error("boom") end
    if v == nil then return "~" end
    return v
  end)
  :to("out")

return b
