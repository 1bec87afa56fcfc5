// Package kafkaio is everything of the agent that talks to Kafka: through sarama, the
// consumer group, the (optionally transactional) producer, the read_committed restore
// reader for changelog topics, topic administration and the embedded broker used by
// `bootstrap.servers = "embedded"` and by the integration tests; through franz-go's kmsg
// (sarama has no such requests), the streams-group member (KIP-1071, streamsgroup*.go).
package kafkaio
