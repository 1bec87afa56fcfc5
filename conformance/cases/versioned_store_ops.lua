local s = require("stoat")
local b = s.builder()

b:addStateStore{ name = "vs", type = "versionedKeyValue", historyRetention = 4500 }

-- Every time an operation may name and the one after it, about the segment boundaries of
-- Kafka's store (2000 ms for this history retention), and a time between each.
local probes = {}
for _, base in ipairs({ 0, 1998, 3998, 6600 }) do
  for d = 0, 6 do probes[#probes + 1] = base + d end
end
for _, t in ipairs({ 1000, 3000, 5000 }) do probes[#probes + 1] = t end

local function text(value, ts, validTo)
  if ts == nil then return "-" end
  return value .. "@" .. ts .. "-" .. (validTo or "")
end

-- One versioned store operation per record, named by its value with its timestamp ("x@1999":
-- put x at 1999; "n@...": put nil; "d@...": delete); it forwards what the operation
-- returned and what the key reads then: latest, and as of every probe time.
b:stream("in")
  :process(function()
    local vs
    return {
      init = function(ctx) vs = ctx:getStateStore("vs") end,
      process = function(ctx, key, value)
        if key == nil or value == nil then return end
        local op, ts = value:match("^(%a+)@(%d+)$")
        ts = tonumber(ts)
        local out = { value }
        if op == "d" then
          out[#out + 1] = text(vs:delete(key, ts))
        else
          local validTo = vs:put(key, op ~= "n" and op or nil, ts)
          out[#out + 1] = validTo == nil and "notput" or tostring(validTo)
        end
        out[#out + 1] = "| " .. text(vs:get(key))
        for _, t in ipairs(probes) do out[#out + 1] = t .. "=" .. text(vs:get(key, t)) end
        ctx:forward(key, table.concat(out, " "))
      end,
    }
  end, { stores = { "vs" }, name = "ops" })
  :to("out")

return b
