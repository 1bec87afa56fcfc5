-- clicks.lua: clicks per user and minute (a windowed count), each user's visits (a session
-- store), and the price history of every item (a versioned store). `make run EXAMPLE=clicks`
-- starts it; docs/queries.md reads the stores over HTTP: the windows of a user, an item's
-- price now, at a past time, or all its versions.
local s = require("stoat")
local b = s.builder()

-- Clicks are keyed by user; the value is the item clicked.
local clicks = b:stream("clicks")

local perMinute = clicks
  :groupByKey()
  :windowedBy(s.TimeWindows.ofSizeWithNoGrace("1m"))
  :count({ materialized = "clicks-per-minute" })
  :toStream(function(w) return w.key .. "@" .. w.window.start end)

perMinute:print({ label = "clicks-per-minute" })
perMinute:to("clicks-per-minute", { valueSerde = "long" })

-- A visit is a user's clicks with less than 30 seconds between one and the next: a session
-- window, its clicks counted in the session store "visits", which keeps a visit until no
-- click can join it any more.
clicks
  :groupByKey()
  :windowedBy(s.SessionWindows.ofInactivityGapWithNoGrace("30s"))
  :count({ materialized = "visits" })

-- Prices are keyed by item, in cents; each change becomes a version valid from the
-- record's timestamp, kept for a day.
b:addStateStore{ name = "prices", type = "versionedKeyValue", valueSerde = "long", historyRetention = "1d" }

b:stream("prices", { valueSerde = "long" })
  :process(function()
    local prices
    return {
      init = function(ctx) prices = ctx:getStateStore("prices") end,
      process = function(_, item, cents, r) prices:put(item, cents, r.timestamp) end,
    }
  end, { stores = { "prices" } })

return b
