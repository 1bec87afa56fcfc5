-- pageviews.lua: the sidecar's pipeline. The application container writes one JSON record
-- per page view to "page-views", keyed by user: {"path": "/cart", "ms": 734}.
local s = require("stoat")
local b = s.builder()

b:addStateStore{ name = "views-per-user", type = "timestampedKeyValue", valueSerde = "long" }

local views = b:stream("page-views", { valueSerde = "json" })

-- Slow requests, as they happen.
views
  :filter(function(user, view) return type(view.ms) == "number" and view.ms > 500 end)
  :mapValues(function(view) return { path = view.path, ms = view.ms } end)
  :to("slow-requests", { valueSerde = "json" })

-- A running count of views per user, kept in a store (GET /v1/stores/views-per-user/...).
views
  :process(function()
    local store
    return {
      init = function(ctx) store = ctx:getStateStore("views-per-user") end,
      process = function(ctx, user, view)
        if user == nil then return end
        local n = (store:get(user) or 0) + 1
        store:put(user, n)
        ctx:forward(user, n)
      end,
    }
  end, { stores = { "views-per-user" } })
  :to("views-per-user", { valueSerde = "long" })

return b
