-- stateless.lua: the benchmark's stateless pipeline (at-least-once): a Lua filter and a
-- mapValues. Keys are words, values ~100-byte lines; words longer than four letters pass.
local s = require("stoat")
local b = s.builder()

b:stream("bench-in", { valueSerde = "string" })
  :filter(function(word) return #word > 4 end)
  :mapValues(function(line) return line:upper() end)
  :to("bench-out")

return b
