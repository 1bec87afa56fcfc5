package agent

import (
	"testing"

	"github.com/IBM/sarama"
)

// heartbeatScript forwards one record per task every 100 ms of wall-clock time from a
// punctuator its processor schedules in init; its input never gets a record.
const heartbeatScript = `
local s = require("stoat")
local b = s.builder()
b:stream("in"):process({
  init = function(ctx)
    ctx:schedule(100, "wall-clock", function(ts)
      ctx:forward("p" .. ctx:partition(), "beat", {timestamp = ts})
    end)
  end,
  process = function() end,
}):to("out")
return b
`

// The agent starts the tasks it is assigned, and their processors' init, without waiting
// for a record, as Kafka Streams does: a wall-clock punctuator fires on partitions that
// never get one (before, a processor was made on its partition's first record). Under
// exactly-once and at-least-once: what init and the punctuator send belongs to an epoch.
func TestWallClockPunctuatorFiresWithoutRecords(t *testing.T) {
	for _, guarantee := range []string{"exactly_once_v2", "at_least_once"} {
		t.Run(guarantee, func(t *testing.T) {
			brokers := testBroker(t, 2, "in", "out")
			cfg := testConfig(t, brokers, heartbeatScript, "processing.guarantee = \""+guarantee+"\"\n")
			ra := startAgent(t, cfg)
			defer func() {
				if err := ra.stop(t); err != nil {
					t.Errorf("Run: %v", err)
				}
			}()
			seen := map[string]bool{}
			readUntil(t, brokers, "out", func(got []*sarama.ConsumerMessage) bool {
				for _, m := range got {
					seen[string(m.Key)] = true
				}
				return seen["p0"] && seen["p1"]
			})
		})
	}
}
