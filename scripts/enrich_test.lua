local t = require("stoat.test")
local s = require("stoat")

local function setup()
  local d = t.driver("enrich.lua")
  local json = { valueSerde = "json" }
  return d,
    d:createInputTopic("customers", json),
    d:createInputTopic("products", json),
    d:createInputTopic("orders", json),
    d:createOutputTopic("orders-enriched", json)
end

t.test("joins an order with its customer and its product", function()
  local _, customers, products, orders, out = setup()
  customers:pipeInput("c1", { name = "Ann" })
  products:pipeInput("p1", { name = "pen", price = 2 })
  orders:pipeInput("c1", { product = "p1", quantity = 3 })
  t.assertEquals(out:readKeyValue(), {
    key = "c1",
    value = { product = "p1", quantity = 3, customer = "Ann", productName = "pen", total = 6 },
  })
end)

t.test("keeps orders of unknown customers, with a null customer", function()
  local _, _, products, orders, out = setup()
  products:pipeInput("p1", { name = "pen", price = 2 })
  orders:pipeInput("c9", { product = "p1", quantity = 1 })
  t.assertEquals(out:readValue().customer, s.null)
end)

t.test("drops orders of unknown products (inner join on the global table)", function()
  local _, customers, _, orders, out = setup()
  customers:pipeInput("c1", { name = "Ann" })
  orders:pipeInput("c1", { product = "nope", quantity = 1 })
  t.assertTrue(out:isEmpty())
end)

t.test("sees table updates for later orders only", function()
  local _, customers, products, orders, out = setup()
  products:pipeInput("p1", { name = "pen", price = 2 })
  customers:pipeInput("c1", { name = "Ann" })
  orders:pipeInput("c1", { product = "p1", quantity = 1 })
  customers:pipeInput("c1", { name = "Anna" })
  orders:pipeInput("c1", { product = "p1", quantity = 1 })
  local first, second = out:readValue(), out:readValue()
  t.assertEquals({ first.customer, second.customer }, { "Ann", "Anna" })
end)
