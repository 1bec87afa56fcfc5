-- lua_heavy.lua: a stateless pipeline whose Lua does most of the work (at-least-once). Each
-- value is a JSON object (decoded by the json serde into a table), goes through a dozen
-- string functions, and leaves as a new JSON object (encoded by the serde); the key, the
-- word, stays.
local s = require("stoat")
local b = s.builder()

b:stream("bench-in", { valueSerde = "json" })
  :mapValues(function(v)
    local word, text = v.word, v.text
    local parts = {}
    for p in text:gmatch("[^%-]+") do parts[#parts + 1] = p:sub(1, 4) end
    local digits = text:gsub("%D", "")
    local _, vowels = word:gsub("[aeiou]", "")
    local sum = 0
    for i = 1, #word do sum = (sum * 31 + word:byte(i)) % 65521 end
    return {
      word = word:upper(),
      reversed = word:reverse(),
      title = word:sub(1, 1):upper() .. word:sub(2),
      vowels = vowels,
      digits = #digits,
      checksum = sum,
      parts = table.concat(parts, "/"),
      label = string.format("%s-%06d", word, v.n % 1000000),
      hour = math.floor(v.ts / 3600000),
    }
  end)
  :to("bench-out", { valueSerde = "json" })

return b
