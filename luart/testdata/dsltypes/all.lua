-- Builds one of every DSL type, and at run time a processor context with a punctuator and
-- one store of each kind: luals_test.go compares their methods with dsl_types.go.
local s = require("stoat")
local b = s.builder()

b:addStateStore{ name = "kv", type = "keyValue" }
b:addStateStore{ name = "win", type = "window", retention = "1h", windowSize = "1m" }
b:addStateStore{ name = "ses", type = "session", retention = "1h" }
b:addStateStore{ name = "ver", type = "versionedKeyValue", historyRetention = "1h" }

local stream = b:stream("in")
local tbl = b:table("tin")
local global = b:globalTable("gin")
global:queryableStoreName()
stream:split():branch(function() return true end):defaultBranch()
local grouped = stream:groupByKey()
tbl:groupBy(function(k, v) return k, v end):count()
grouped:cogroup(function(_, _, agg) return agg end):aggregate(function() return "" end)
grouped:cogroup(function(_, _, agg) return agg end):windowedBy(s.TimeWindows.ofSizeWithNoGrace("1m")):aggregate(function() return "" end)
grouped:cogroup(function(_, _, agg) return agg end):windowedBy(s.SessionWindows.ofInactivityGapWithNoGrace("1m"))
  :aggregate(function() return "" end, function(_, a) return a end)
b:stream("rin", { offsetReset = s.AutoOffsetReset.byDuration("1h"), keySerde = s.WindowedSerdes.sessionWindowedSerdeFrom("string") })
b:stream({ pattern = "pin-.*" }, { keySerde = s.WindowedSerdes.timeWindowedSerdeFrom("string", "1m") })
b:addGlobalStore({ name = "gst" }, "gst-in", nil, { process = function() end })
grouped:windowedBy(s.TimeWindows.ofSizeWithNoGrace("1m"):advanceBy("1m")):count()
grouped:windowedBy(s.SlidingWindows.ofTimeDifferenceWithNoGrace("1m")):count()
grouped:windowedBy(s.SessionWindows.ofInactivityGapWithNoGrace("1m")):count()
stream:join(stream, function(a) return a end, s.JoinWindows.ofTimeDifferenceWithNoGrace("1m"):before("1m"))
stream:leftJoin(stream, function(a) return a end, s.JoinWindows.of("1m"):grace("1m"))
s.EmitStrategy.onWindowClose():type()
s.Suppressed.untilTimeLimit("1s", s.Suppressed.BufferConfig.maxRecords(1):withMaxBytes(10)):withName("x")
s.Suppressed.BufferConfig.unbounded()

stream:process(function()
  return {
    init = function(ctx)
      ctx:schedule("1s", "wall-clock", function() end):cancel()
      for _, name in ipairs({ "kv", "win", "ses", "ver" }) do ctx:getStateStore(name):name() end
    end,
    process = function() end,
  }
end, { stores = { "kv", "win", "ses", "ver" } })

return b
