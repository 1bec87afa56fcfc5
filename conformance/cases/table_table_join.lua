local s = require("stoat")
local b = s.builder()

local l = b:table("left")
local r = b:table("right")
l:join(r, function(lv, rv) return lv .. "+" .. rv end):toStream():to("out")

return b
