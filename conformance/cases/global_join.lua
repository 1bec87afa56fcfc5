local s = require("stoat")
local b = s.builder()

local function n(x) if x == nil then return "~" end return x end

local g = b:globalTable("rates", { materialized = "rates" })
b:stream("orders")
  :join(g, function(_, v) return v end, function(sk, mk, sv, tv) return n(sk) .. "/" .. mk .. "/" .. sv .. "/" .. tv end)
  :to("out")

return b
