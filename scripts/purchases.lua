-- purchases.lua: spending per customer from Avro purchases. They arrive in Confluent's wire format
-- (any registered schema: "avro" reads each record with the schema its id names); the totals
-- leave as Avro records of customer-spending.avsc, registered under customer-spending-value, and
-- are kept in the store "customer-spending" (ask it: GET /v1/stores/customer-spending/keys/ann).
-- Run it with `make run EXAMPLE=purchases`; docs/serdes.md explains the Lua values.
local s = require("stoat")
local b = s.builder()

local totals = s.avro({ schema = "customer-spending.avsc" })

local spending = b:stream("purchases", { keySerde = "string", valueSerde = "avro" })
  :filter(function(id, order) return order.status ~= "CANCELLED" end)
  :groupBy(function(id, order) return order.customer end)
  :aggregate(
    function() return { customer = "", orders = 0, spent = 0, lastOrderId = 0, lastOrderAt = 0, coupons = s.array() } end,
    function(customer, order, total)
      total.customer = customer
      total.orders = total.orders + 1
      for _, item in ipairs(order.items) do
        total.spent = total.spent + item.quantity * item.price
      end
      -- ids beyond 2^53 reach Lua as decimal strings, and go back out exact
      total.lastOrderId = order.id
      total.lastOrderAt = math.max(total.lastOrderAt, order.placedAt)
      -- a null union branch reaches Lua as stoat.null
      if order.coupon ~= s.null then
        total.coupons[#total.coupons + 1] = order.coupon
      end
      return total
    end,
    { materialized = { name = "customer-spending", valueSerde = totals } })
  :toStream()

spending:print({ label = "customer-spending" })
spending:to("customer-spending", { valueSerde = totals })

return b
