local s = require("stoat")
local b = s.builder()

local function n(x) if x == nil then return "~" end return x end

local l = b:table("left")
local r = b:table("right")
l:outerJoin(r, function(lv, rv) return n(lv) .. "+" .. n(rv) end):toStream():to("out")

return b
