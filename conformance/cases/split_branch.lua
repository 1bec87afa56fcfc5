local s = require("stoat")
local b = s.builder()

local br = b:stream("in"):split({ name = "sp-" })
  :branch(function(_, v) return v == nil end, { name = "nulls" })
  :branch(function(_, v) return #v <= 3 end,
    { name = "short", withFunction = function(st) return st:mapValues(function(v) return v:upper() end) end })
  :defaultBranch({ name = "long" })
br["sp-nulls"]:to("nulls")
br["sp-short"]:to("short")
br["sp-long"]:to("long")

return b
