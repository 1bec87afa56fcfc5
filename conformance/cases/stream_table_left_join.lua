local s = require("stoat")
local b = s.builder()

local function n(x) if x == nil then return "~" end return x end

local t = b:table("users")
b:stream("orders")
  :selectKey(function(_, v) if v == nil or v == "" then return nil end return v:sub(1, 1) end)
  :leftJoin(t, function(k, o, u) return n(k) .. ":" .. o .. "/" .. n(u) end, { name = "rekeyed" })
  :to("out")

return b
