local s = require("stoat")
local b = s.builder()

local function n(x) if x == nil then return "~" end return x end

local l = b:stream("left")
local r = b:stream("right")
l:mapValues(function(v) return "L" .. n(v) end)
  :merge(r:mapValues(function(v) return "R" .. n(v) end), { name = "both" })
  :to("out")

return b
