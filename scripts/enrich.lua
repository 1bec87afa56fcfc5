-- enrich.lua: order enrichment. Each order (JSON) is joined with its customer from a
-- KTable and with its product from a GlobalKTable, then written to "orders-enriched".
-- `make run EXAMPLE=enrich` starts it with a demo feeder of customers, products and orders.
local s = require("stoat")
local b = s.builder()

local customers = b:table("customers", { valueSerde = "json" })
local products = b:globalTable("products", { valueSerde = "json" })

local enriched = b:stream("orders", { valueSerde = "json" })
  -- orders are keyed by customer id; a customer not (yet) known still gets through
  :leftJoin(customers, function(order, customer)
    order.customer = customer and customer.name or s.null
    return order
  end)
  -- the product comes from the global table, looked up by the order's product id
  :join(products, function(customerId, order) return order.product end,
    function(customerId, productId, order, product)
      order.productName = product.name
      order.total = order.quantity * product.price
      return order
    end)

enriched:print({ label = "orders-enriched" })
enriched:to("orders-enriched", { valueSerde = "json" })

return b
