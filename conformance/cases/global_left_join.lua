local s = require("stoat")
local b = s.builder()

local function n(x) if x == nil then return "~" end return x end

local g = b:globalTable("rates")
b:stream("orders")
  :leftJoin(g, function(_, v) if v == nil or v == "" then return nil end return v:sub(1, 1) end,
    function(sk, mk, sv, tv) return n(sk) .. "/" .. n(mk) .. "/" .. sv .. "/" .. n(tv) end)
  :to("out")

return b
