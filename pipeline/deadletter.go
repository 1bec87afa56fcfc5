package pipeline

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// The headers Kafka Streams puts on a dead letter (KIP-1034, ExceptionHandlerUtils).
const (
	HeaderErrorsException  = "__streams.errors.exception"
	HeaderErrorsMessage    = "__streams.errors.message"
	HeaderErrorsStacktrace = "__streams.errors.stacktrace"
	HeaderErrorsTopic      = "__streams.errors.topic"
	HeaderErrorsPartition  = "__streams.errors.partition"
	HeaderErrorsOffset     = "__streams.errors.offset"
)

// The exception class names a dead letter carries in __streams.errors.exception, where
// Kafka Streams puts the Java class of the exception (e.getClass().getName()).
const (
	ExceptionDeserialization = "stoatflow.DeserializationError"
	ExceptionProcessing      = "stoatflow.ProcessingError"
	ExceptionProduction      = "stoatflow.ProductionError"
)

// MaxErrorHeaderBytes bounds __streams.errors.message and __streams.errors.stacktrace of a
// dead letter: an error message can be as large as a script makes it (error(string.rep(...)))
// and would make the dead letter larger than max.request.size. A longer value is cut at a
// UTF-8 boundary and ends with a note of its full length.
const MaxErrorHeaderBytes = 8192

// DeadLetterHeaders are the headers of the dead letter of a failed input record, as Kafka
// Streams 4.2+ writes them (ExceptionHandlerUtils.buildDeadLetterQueueRecord): the record's
// own headers first, then the __streams.errors.* headers naming exception (one of the
// Exception* names), err and where the record was read. The dead letter's key, value and
// timestamp are the record's.
func DeadLetterHeaders(in *SourceRecord, exception string, err error) Headers {
	message := err.Error()
	var re *RecordError
	if errors.As(err, &re) {
		message = re.Err.Error() // without the topic-partition@offset the headers carry
	}
	headers := make(Headers, 0, len(in.Headers)+6)
	headers = append(headers, in.Headers...)
	return append(headers,
		Header{Key: HeaderErrorsException, Value: []byte(exception)},
		Header{Key: HeaderErrorsMessage, Value: capErrorHeader(message)},
		// Go errors carry no stack; the whole chain (with the Lua traceback, when the
		// runtime gives one) is the closest thing.
		Header{Key: HeaderErrorsStacktrace, Value: capErrorHeader(err.Error())},
		Header{Key: HeaderErrorsTopic, Value: []byte(in.Topic)},
		Header{Key: HeaderErrorsPartition, Value: []byte(strconv.Itoa(int(in.Partition)))},
		Header{Key: HeaderErrorsOffset, Value: []byte(strconv.FormatInt(in.Offset, 10))},
	)
}

// capErrorHeader returns s as a header value of at most MaxErrorHeaderBytes.
func capErrorHeader(s string) []byte {
	if len(s) <= MaxErrorHeaderBytes {
		return []byte(s)
	}
	note := fmt.Sprintf(" ... [cut from %d bytes]", len(s))
	cut := MaxErrorHeaderBytes - len(note)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return []byte(s[:cut] + note)
}

// ExceptionHandlers say what a Driver does with an input record the topology fails on, as
// Kafka Streams' deserialization.exception.handler and processing.exception.handler
// (LogAndFail, the default, or LogAndContinue) and errors.dead.letter.queue.topic.name do.
type ExceptionHandlers struct {
	// ContinueOnDeserializationError skips a record whose key or value its source cannot
	// deserialize instead of failing.
	ContinueOnDeserializationError bool
	// ContinueOnProcessingError skips a record a processor fails on instead of failing.
	ContinueOnProcessingError bool
	// DeadLetterQueueTopic, when set, receives the dead letter of every record either
	// handler skips or fails on.
	DeadLetterQueueTopic string
}

// handle applies the handlers to in, which the topology failed on with err: nil when the
// record is skipped. The dead letter, if any, is sent before, whatever the handler decides.
// Other errors are returned as they are.
func (h ExceptionHandlers) handle(c RecordCollector, in *SourceRecord, err error) error {
	var de *DeserializationError
	var ne *NodeError
	var exception string
	var cont bool
	switch {
	case errors.As(err, &de):
		exception, cont = ExceptionDeserialization, h.ContinueOnDeserializationError
	case errors.As(err, &ne):
		exception, cont = ExceptionProcessing, h.ContinueOnProcessingError
	default:
		return err
	}
	if h.DeadLetterQueueTopic != "" {
		if serr := c.Send(h.DeadLetterQueueTopic, -1, in.Key, in.Value, DeadLetterHeaders(in, exception, err), in.Timestamp, in); serr != nil {
			return fmt.Errorf("dead-letter topic %s: %w", h.DeadLetterQueueTopic, serr)
		}
	}
	if cont {
		return nil
	}
	return err
}
