local s = require("stoat")
local b = s.builder()

local function n(x) if x == nil then return "~" end return x end
local function fk(v)
  local f = v:sub(1, v:find("|", 1, true) - 1)
  if f == "" then return nil end
  return f
end

local orders = b:table("orders")
local customers = b:table("customers")
orders:leftJoin(customers, function(_, v) return fk(v) end, function(o, c) return o .. "/" .. n(c) end,
  { withKey = true, name = "fkl", materialized = "fk-result" })
  :toStream():to("out")

return b
