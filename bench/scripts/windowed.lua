-- windowed.lua: the benchmark's windowed count: hopping windows of 10 s advancing by 5 s
-- with 1 s of grace, final results only (suppress until the window closes).
local s = require("stoat")
local b = s.builder()

b:stream("bench-in", { valueSerde = "string" })
  :groupByKey()
  :windowedBy(s.TimeWindows.ofSizeAndGrace(10000, 1000):advanceBy(5000))
  :count({ materialized = "bench-window-counts" })
  :suppress(s.Suppressed.untilWindowCloses(s.Suppressed.BufferConfig.unbounded()))
  :toStream()
  :map(function(wk, n) return wk.key .. "@" .. string.format("%d", wk.window.start), n end)
  :to("bench-out", { valueSerde = "long" })

return b
