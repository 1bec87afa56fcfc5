local s = require("stoat")
local b = s.builder()

local function n(x) if x == nil then return "~" end return x end

b:stream("in")
  :filter(function(_, v) return v == nil or #v ~= 3 end)
  :filterNot(function(k) return k == "e" end)
  :mapValues(function(k, v) return n(k) .. ":" .. n(v) end, { withKey = true })
  :selectKey(function(k) if k == nil then return nil end return k .. k end)
  :peek(function() end)
  :flatMapValues(function(v) return { v, v:upper() } end)
  :map(function(k, v) return v:sub(1, 1), k end)
  :flatMap(function(k, v) if v == nil then return {} end return { { k, v }, { v, k } } end)
  :to("out")

return b
