local s = require("stoat")
local b = s.builder()

local function n(x) if x == nil then return "~" end return x end

local l = b:table("left")
local r = b:table("right")
l:leftJoin(r, function(lv, rv) return lv .. "+" .. n(rv) end, { materialized = "joined" }):toStream():to("out")

return b
