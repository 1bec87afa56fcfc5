package config

// ContinueOnDeserializationError reports whether deserialization.exception.handler is
// LogAndContinue. The deprecated default.deserialization.exception.handler applies only
// when the new name is not set, as in Kafka Streams.
func (c *Config) ContinueOnDeserializationError() bool {
	return orDeprecated(c, deserializationHandler, defaultDeserializationHandler) == "LogAndContinue"
}

// ContinueOnProcessingError reports whether processing.exception.handler is LogAndContinue.
func (c *Config) ContinueOnProcessingError() bool {
	return processingHandler.Get(c) == "LogAndContinue"
}

// ContinueOnProductionError reports whether production.exception.handler is LogAndContinue
// (the deprecated default.production.exception.handler applies when the new name is not set).
func (c *Config) ContinueOnProductionError() bool {
	return orDeprecated(c, productionHandler, defaultProductionHandler) == "LogAndContinue"
}

// DeadLetterQueueTopic is errors.dead.letter.queue.topic.name; "" means none.
func (c *Config) DeadLetterQueueTopic() string { return deadLetterQueueTopic.Get(c) }

// checkDeadLetterQueue checks the dead-letter topic is a name Kafka accepts.
func (b *builder) checkDeadLetterQueue() {
	t := b.cfg.DeadLetterQueueTopic()
	if t != "" && (t == "." || t == ".." || len(t) > 249 || !validID.MatchString(t)) {
		b.fail(KindInvalid, deadLetterQueueTopic.FullName(), "invalid value %q: a topic name of at most 249 letters, digits, '.', '_' and '-' (not \".\" or \"..\")", t)
	}
}
