package kafkaio

import "github.com/twmb/franz-go/pkg/kmsg"

// HeartbeatTopology is the declaration as a join heartbeat carries it, for the real-broker
// tests that play a member by hand.
func (t *StreamsTopology) HeartbeatTopology() *kmsg.StreamsGroupHeartbeatRequestTopology {
	w := t.wire
	return &w
}
