-- wordcount.lua: Kafka Streams' word count, the example `make run` starts.
-- Lines of text in, a running count per word out (a KTable's updates as a stream).
local s = require("stoat")
local b = s.builder()

local counts = b:stream("text-lines", { valueSerde = "string" })
  :flatMapValues(function(line)
    local words = {}
    for w in line:lower():gmatch("%a+") do words[#words + 1] = w end
    return words
  end)
  :groupBy(function(_, word) return word end)
  :count({ materialized = "word-counts" })
  :toStream()

counts:print({ label = "word-counts" })
counts:to("word-counts", { valueSerde = "long" })

return b
