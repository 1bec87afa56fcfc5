local s = require("stoat")
local b = s.builder()

local t = b:table("users", { materialized = "users" })
b:stream("orders"):join(t, function(o, u) return o .. "/" .. u end):to("out")

return b
