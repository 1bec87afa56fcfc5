local s = require("stoat")
local b = s.builder()

local function n(x) if x == nil then return "~" end return x end

local l = b:stream("left")
local r = b:stream("right")
l:outerJoin(r, function(lv, rv) return n(lv) .. "+" .. n(rv) end,
  s.JoinWindows.ofTimeDifferenceAndGrace(30, 20):before(10)):to("out")

return b
