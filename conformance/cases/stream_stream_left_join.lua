local s = require("stoat")
local b = s.builder()

local function n(x) if x == nil then return "~" end return x end

local l = b:stream("left")
local r = b:stream("right")
l:leftJoin(r, function(k, lv, rv) return n(k) .. ":" .. lv .. "+" .. n(rv) end,
  s.JoinWindows.ofTimeDifferenceAndGrace(40, 30)):to("out")

return b
