local s = require("stoat")
local b = s.builder()

local l = b:stream("left")
local r = b:stream("right")
l:join(r, function(lv, rv) return lv .. "+" .. rv end, s.JoinWindows.ofTimeDifferenceAndGrace(50, 20)):to("out")

return b
