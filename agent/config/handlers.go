package config

// ContinueOnDeserializationError reports whether deserialization.exception.handler is
// LogAndContinue. The deprecated default.deserialization.exception.handler applies only
// when the new name is not set, as in Kafka Streams.
func (c *Config) ContinueOnDeserializationError() bool {
	key := "streams.deserialization.exception.handler"
	if !c.IsSet(key) && c.IsSet("streams.default.deserialization.exception.handler") {
		key = "streams.default.deserialization.exception.handler"
	}
	return c.value(key) == "LogAndContinue"
}

// ContinueOnProcessingError reports whether processing.exception.handler is LogAndContinue.
func (c *Config) ContinueOnProcessingError() bool {
	return c.value("streams.processing.exception.handler") == "LogAndContinue"
}

// ContinueOnProductionError reports whether production.exception.handler is LogAndContinue
// (the deprecated default.production.exception.handler applies when the new name is not set).
func (c *Config) ContinueOnProductionError() bool {
	key := "streams.production.exception.handler"
	if !c.IsSet(key) && c.IsSet("streams.default.production.exception.handler") {
		key = "streams.default.production.exception.handler"
	}
	return c.value(key) == "LogAndContinue"
}

// DeadLetterQueueTopic is errors.dead.letter.queue.topic.name; "" means none.
func (c *Config) DeadLetterQueueTopic() string {
	s, _ := c.value("streams.errors.dead.letter.queue.topic.name").(string)
	return s
}

// checkDeadLetterQueue checks the dead-letter topic is a name Kafka accepts.
func (b *builder) checkDeadLetterQueue() {
	const key = "streams.errors.dead.letter.queue.topic.name"
	t := b.cfg.DeadLetterQueueTopic()
	if t != "" && (t == "." || t == ".." || len(t) > 249 || !validID.MatchString(t)) {
		b.fail(key, "invalid value %q: a topic name of at most 249 letters, digits, '.', '_' and '-' (not \".\" or \"..\")", t)
	}
}
