-- lua_heavy.lua: a stateless pipeline whose Lua does most of the work (at-least-once). Each
-- value is a JSON object (decoded by the json serde into a table), goes through a few dozen
-- string functions, and leaves as a new JSON object (encoded by the serde); the key, the
-- word, stays.
local s = require("stoat")
local b = s.builder()

b:stream("bench-in", { valueSerde = "json" })
  :mapValues(function(v)
    local word, text = v.word, v.text
    local parts, sums = {}, {}
    for p in text:gmatch("[^%-%s]+") do
      parts[#parts + 1] = p:sub(1, 4):reverse()
      local sum = 0
      for d in p:gmatch("%d") do sum = sum + tonumber(d) end
      sums[#sums + 1] = string.format("%02d", sum % 100)
    end
    local letters = {}
    for c in word:gmatch("%a") do letters[c] = (letters[c] or 0) + 1 end
    local counts = {}
    for c, n in pairs(letters) do counts[#counts + 1] = c .. n end
    table.sort(counts)
    local _, vowels = word:gsub("[aeiou]", "")
    local hash = 0
    for i = 1, #text do hash = (hash * 31 + text:byte(i)) % 65521 end
    return {
      word = word:upper(),
      reversed = word:reverse(),
      title = word:sub(1, 1):upper() .. word:sub(2),
      vowels = vowels,
      letters = table.concat(counts, ","),
      parts = table.concat(parts, "/"),
      sums = table.concat(sums, ""),
      hash = hash,
      label = string.format("%s-%06d", word, v.n % 1000000),
      hour = math.floor(v.ts / 3600000),
    }
  end)
  :to("bench-out", { valueSerde = "json" })

return b
