-- stateless_avro.lua: stateless.lua with Avro values in and out (bench/scripts/line.avsc, in
-- Confluent's wire format on the harness's schema registry): the same filter on the key and
-- the same upper-casing of the line, on a record of four fields.
local s = require("stoat")
local b = s.builder()

b:stream("bench-in", { valueSerde = "avro" })
  :filter(function(word) return #word > 4 end)
  :mapValues(function(v) v.line = v.line:upper() return v end)
  :to("bench-out", { valueSerde = s.avro({ schema = "line.avsc" }) })

return b
