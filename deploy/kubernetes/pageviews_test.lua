-- Tests of pageviews.lua: stoatflow test deploy/kubernetes
local t = require("stoat.test")

t.test("slow requests are passed on, fast ones are not", function()
  local d = t.driver("pageviews.lua")
  local views = d:createInputTopic("page-views", { valueSerde = "json" })
  local slow = d:createOutputTopic("slow-requests", { valueSerde = "json" })

  views:pipeInput("ann", { path = "/cart", ms = 734, agent = "x" })
  views:pipeInput("bob", { path = "/", ms = 12 })
  views:pipeInput("bob", { path = "/broken" })

  t.assertEquals(slow:readKeyValue(), { key = "ann", value = { path = "/cart", ms = 734 } })
  t.assertTrue(slow:isEmpty())
end)

t.test("views are counted per user", function()
  local d = t.driver("pageviews.lua")
  local views = d:createInputTopic("page-views", { valueSerde = "json" })
  local counts = d:createOutputTopic("views-per-user", { valueSerde = "long" })

  views:pipeInput("ann", { path = "/", ms = 5 })
  views:pipeInput("bob", { path = "/", ms = 5 })
  views:pipeInput("ann", { path = "/cart", ms = 5 })
  views:pipeInput({ path = "/anonymous", ms = 5 })

  t.assertEquals(counts:readKeyValuesToMap(), { ann = 2, bob = 1 })
end)
