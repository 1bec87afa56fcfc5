-- wordcount.lua: the benchmark's word count, shaped as scripts/wordcount.lua without the
-- print: flatMapValues → groupBy → count → to, every count update emitted.
local s = require("stoat")
local b = s.builder()

b:stream("bench-in", { valueSerde = "string" })
  :flatMapValues(function(line)
    local words = {}
    for w in line:lower():gmatch("%a+") do words[#words + 1] = w end
    return words
  end)
  :groupBy(function(_, word) return word end)
  :count({ materialized = "bench-counts" })
  :toStream()
  :to("bench-out", { valueSerde = "long" })

return b
