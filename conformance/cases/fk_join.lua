local s = require("stoat")
local b = s.builder()

local function fk(v)
  local f = v:sub(1, v:find("|", 1, true) - 1)
  if f == "" then return nil end
  return f
end

local orders = b:table("orders")
local customers = b:table("customers")
orders:join(customers, fk, function(o, c) return o .. "/" .. c end):toStream():to("out")

return b
