local s = require("stoat")
local b = s.builder()

b:stream("text-lines")
  :flatMapValues(function(v)
    local t = {}
    if v == nil then return t end
    for w in v:lower():gmatch("[a-z]+") do t[#t + 1] = w end
    return t
  end)
  :filter(function(_, w) return w ~= "" end)
  :groupBy(function(_, w) return w end)
  :count()
  :toStream()
  :to("word-counts", { valueSerde = "long" })

return b
