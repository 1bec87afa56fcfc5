package config

import "testing"

func TestExceptionHandlers(t *testing.T) {
	cases := []struct {
		name                   string
		streams                string
		deserialize, processes bool
		dlq                    string
	}{
		{"defaults fail", "", false, false, ""},
		{"short names", "deserialization.exception.handler = \"LogAndContinue\"\nprocessing.exception.handler = \"logandcontinue\"", true, true, ""},
		{"Kafka class names", "deserialization.exception.handler = \"org.apache.kafka.streams.errors.LogAndContinueExceptionHandler\"\n" +
			"processing.exception.handler = \"org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler\"\n" +
			"production.exception.handler = \"org.apache.kafka.streams.errors.DefaultProductionExceptionHandler\"", true, true, ""},
		{"fail class names", "deserialization.exception.handler = \"LogAndFailExceptionHandler\"\n" +
			"processing.exception.handler = \"org.apache.kafka.streams.errors.LogAndFailProcessingExceptionHandler\"", false, false, ""},
		{"deprecated name", "default.deserialization.exception.handler = \"LogAndContinue\"", true, false, ""},
		{"new name wins over the deprecated one", "default.deserialization.exception.handler = \"LogAndContinue\"\ndeserialization.exception.handler = \"LogAndFail\"", false, false, ""},
		{"dead letter topic", "errors.dead.letter.queue.topic.name = \"app-dlq\"", false, false, "app-dlq"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, "", tc.streams)
			if c.ContinueOnProductionError() {
				t.Error("ContinueOnProductionError = true, want the default LogAndFail")
			}
			if got := c.ContinueOnDeserializationError(); got != tc.deserialize {
				t.Errorf("ContinueOnDeserializationError = %v, want %v", got, tc.deserialize)
			}
			if got := c.ContinueOnProcessingError(); got != tc.processes {
				t.Errorf("ContinueOnProcessingError = %v, want %v", got, tc.processes)
			}
			if got := c.DeadLetterQueueTopic(); got != tc.dlq {
				t.Errorf("DeadLetterQueueTopic = %q, want %q", got, tc.dlq)
			}
		})
	}
}

func TestProductionHandlerContinueUnderAtLeastOnce(t *testing.T) {
	for _, streams := range []string{
		"production.exception.handler = \"LogAndContinue\"",
		"default.production.exception.handler = \"LogAndContinue\"",
	} {
		if c := mustParse(t, "", streams); !c.ContinueOnProductionError() {
			t.Errorf("%s: ContinueOnProductionError = false, want true", streams)
		}
	}
	if c := mustParse(t, "", "default.production.exception.handler = \"LogAndContinue\"\nproduction.exception.handler = \"LogAndFail\""); c.ContinueOnProductionError() {
		t.Error("the deprecated name won over production.exception.handler")
	}
}
