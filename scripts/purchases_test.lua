local t = require("stoat.test")
local s = require("stoat")

-- The test driver has an in-memory schema registry: the input topic registers purchase.avsc
-- under purchases-value and writes Confluent's wire format, as the shop's service would.
local function setup()
  local d = t.driver("purchases.lua")
  return d,
    d:createInputTopic("purchases", { valueSerde = s.avro({ schema = "purchase.avsc" }) }),
    d:createOutputTopic("customer-spending", { valueSerde = "avro" })
end

local function order(id, customer, status, items, coupon)
  return { id = id, customer = customer, status = status, items = items, coupon = coupon, placedAt = 1700000000000 + id }
end

t.test("sums each customer's orders", function()
  local d, orders, out = setup()
  orders:pipeInput("o1", order(1, "ann", "PAID", { { sku = "pen", quantity = 2, price = 1.5 } }))
  orders:pipeInput("o2", order(2, "ann", "PLACED", { { sku = "ink", quantity = 1, price = 4 } }, "WELCOME"))
  local last = out:readKeyValuesToMap()
  t.assertEquals(last.ann, { customer = "ann", orders = 2, spent = 7, lastOrderId = 2, lastOrderAt = 1700000000002, coupons = { "WELCOME" } })
  t.assertEquals(d:getKeyValueStore("customer-spending"):get("ann").orders, 2)
end)

t.test("ignores cancelled orders", function()
  local _, orders, out = setup()
  orders:pipeInput("o3", order(3, "bob", "CANCELLED", {}))
  t.assertTrue(out:isEmpty())
end)

t.test("keeps an empty coupon list an array", function()
  local _, orders, out = setup()
  orders:pipeInput("o4", order(4, "cy", "PAID", { { sku = "pad", quantity = 1, price = 3 } }))
  local total = out:readValue()
  t.assertEquals(total.coupons, s.array())
end)

t.test("keeps 64-bit ids exact (a decimal string beyond 2^53)", function()
  local _, orders, out = setup()
  orders:pipeInput("o5", order("9007199254740993", "dee", "PAID", {}))
  t.assertEquals(out:readValue().lastOrderId, "9007199254740993")
end)
