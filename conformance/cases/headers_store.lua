local s = require("stoat")
local b = s.builder()

b:addStateStore{ name = "last", type = "timestampedKeyValue", headers = true }

b:stream("in")
  :process(function()
    local last
    return {
      init = function(ctx) last = ctx:getStateStore("last") end,
      process = function(ctx, key, value)
        if key == nil then return end
        local pv, pts, phs = last:get(key)
        if value == nil then last:delete(key) else last:put(key, value) end
        if pv ~= nil then ctx:forward(key, pv, { timestamp = pts, headers = phs }) end
      end,
    }
  end, { stores = { "last" } })
  :to("out")

return b
