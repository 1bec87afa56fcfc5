local s = require("stoat")
local b = s.builder()

b:addStateStore{ name = "counts", type = "keyValue", keySerde = "string", valueSerde = "long" }

b:stream("in")
  :process(function()
    local counts
    return {
      init = function(ctx)
        counts = ctx:getStateStore("counts")
        ctx:schedule(100, "wall-clock", function(ts)
          for k, n in counts:all() do ctx:forward(k, n, { timestamp = ts }) end
        end)
      end,
      process = function(_, key)
        if key == nil then return end
        counts:put(key, (counts:get(key) or 0) + 1)
      end,
    }
  end, { stores = { "counts" }, name = "counter" })
  :to("out", { valueSerde = "long" })

return b
