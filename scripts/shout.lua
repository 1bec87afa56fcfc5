-- shout.lua: a stateless example pipeline; `make run EXAMPLE=shout` starts it.
-- Reads text lines, splits them into words, keeps the longer ones, upper-cases them,
-- keys each by its first letter and writes them to the "words" topic.
local s = require("stoat")
local b = s.builder()

local words = b:stream("text-lines", { valueSerde = "string" })
  :flatMapValues(function(line)
    local out = {}
    for w in line:lower():gmatch("%a+") do out[#out + 1] = w end
    return out
  end)
  :filter(function(_, word) return #word > 3 end)
  :selectKey(function(_, word) return word:sub(1, 1) end)
  :mapValues(function(word, r)
    return word:upper() .. " (from " .. r.topic .. "-" .. r.partition .. "@" .. r.offset .. ")"
  end)

words:print({ label = "words" })
words:to("words")

return b
