package agent

import (
	"testing"

	"github.com/IBM/sarama"
)

const globalStoreScript = `
local s = require("stoat")
local b = s.builder()
b:addGlobalStore({name = "rates"}, "rates-in", nil, function()
  local rates
  return {
    init = function(ctx) rates = ctx:getStateStore("rates") end,
    process = function(ctx, k, v) rates:put(k, "rate " .. v) end,
  }
end)
b:stream("amounts"):process(function()
  local rates
  return {
    init = function(ctx) rates = ctx:getStateStore("rates") end,
    process = function(ctx, k, v) ctx:forward(k, v .. " at " .. tostring(rates:get(k))) end,
  }
end):to("out")
return b
`

// addGlobalStore against Kafka: the global topic, every partition, goes through the user's
// processor before processing starts, and the store it keeps is read by the stream's.
func TestAddGlobalStoreReadsItsTopicThroughTheProcessor(t *testing.T) {
	addGlobalStoreReadsItsTopicThroughTheProcessor(t, onKfake(t, 2, "rates-in", "amounts", "out"))
}

func addGlobalStoreReadsItsTopicThroughTheProcessor(t *testing.T, b *brokerUnderTest) {
	rates, amounts, out := b.topic(t, "rates-in"), b.topic(t, "amounts"), b.topic(t, "out")
	sendKV(t, b.brokers, rates, 0, "eur", "3")
	sendKV(t, b.brokers, rates, 1, "usd", "4")
	ra := startAgent(t, b.config(t, globalStoreScript, ""))
	defer func() { _ = ra.stop(t) }()
	sendKV(t, b.brokers, amounts, 0, "eur", "10")
	sendKV(t, b.brokers, amounts, 1, "usd", "20")
	readUntil(t, b.brokers, out, func(got []*sarama.ConsumerMessage) bool {
		return hasValue("10 at rate 3")(got) && hasValue("20 at rate 4")(got)
	})
}
