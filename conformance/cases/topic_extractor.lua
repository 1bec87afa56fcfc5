local s = require("stoat")
local b = s.builder()

b:stream("in"):to(function(_, v) if v == nil then return "nulls" end return "out-" .. #v end)

return b
