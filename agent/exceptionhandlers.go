package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
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

// deadLetter is a failed input record on its way to the dead-letter topic.
type deadLetter struct {
	key, value []byte
	headers    pipeline.Headers
	timestamp  int64
	record     string // the failed record as topic-partition@offset, for the log
}

// failedRecord is the error a FAIL handler returns: the application stops, and retry writes
// the dead letter (if any) once the failed epoch is dropped.
type failedRecord struct {
	err    error
	letter *deadLetter
}

func (e *failedRecord) Error() string { return e.err.Error() }
func (e *failedRecord) Unwrap() error { return e.err }

// handleRecordError applies the deserialization or processing exception handler to a record
// the topology built from b failed on. nil means the handler continued: the record is
// skipped and its dead letter, if a dead-letter topic is set, is sent through out in the
// epoch (inside its transaction under exactly-once). Errors the handlers do not cover (a
// failed send, a fenced producer, a bad timestamp) are returned as they are.
func (l *loop) handleRecordError(out recordSender, b *pipeline.StreamsBuilder, msg *pipeline.SourceRecord, err error) error {
	var reason, exception, node string
	var de *pipeline.DeserializationError
	var ne *pipeline.NodeError
	var pe *kafkaio.ProduceError
	var cont bool
	switch {
	case errors.As(err, &pe) && pe.Unsent:
		// Refused before it was sent: under exactly-once the transaction is unharmed, so
		// the production handler may skip it under either guarantee.
		reason, exception, cont = metrics.DropProduction, ExceptionProduction, l.a.cfg.ContinueOnProductionError()
	case pe != nil || errors.Is(err, kafkaio.ErrFenced):
		return err
	case errors.As(err, &de):
		reason, exception, node, cont = metrics.DropDeserialization, ExceptionDeserialization, b.SourceNode(msg.Topic), l.a.cfg.ContinueOnDeserializationError()
	case errors.As(err, &ne):
		reason, exception, node, cont = metrics.DropProcessing, ExceptionProcessing, ne.Node, l.a.cfg.ContinueOnProcessingError()
	default:
		return err
	}
	var letter *deadLetter
	if l.a.cfg.DeadLetterQueueTopic() != "" {
		letter = newDeadLetter(msg, exception, err)
	}
	if !cont {
		return &failedRecord{err: err, letter: letter}
	}
	l.a.log.Warn("skipping a record the "+reason+" exception handler continued on",
		"record", fmt.Sprintf("%s-%d@%d", msg.Topic, msg.Partition, msg.Offset), "node", node, "err", err)
	l.a.metrics.RecordsDropped.WithLabelValues(node, reason).Inc()
	if letter == nil {
		return nil
	}
	return l.sendDeadLetter(out, letter, msg)
}

// recordSender sends a record through the producer: a worker's lane (kafkaio.Lane), or the
// producer itself from the loop.
type recordSender interface {
	Send(topic string, partition int32, key, value []byte, headers pipeline.Headers, timestampMs int64, source *pipeline.SourceRecord) error
}

// newDeadLetter builds the dead letter of msg as Kafka Streams 4.2+ does
// (ExceptionHandlerUtils.buildDeadLetterQueueRecord): its key and value bytes as read, at its
// timestamp, with its own headers first and then the __streams.errors.* headers.
func newDeadLetter(msg *pipeline.SourceRecord, exception string, err error) *deadLetter {
	message := err.Error()
	var re *pipeline.RecordError
	if errors.As(err, &re) {
		message = re.Err.Error() // without the topic-partition@offset the headers carry
	}
	headers := make(pipeline.Headers, 0, len(msg.Headers)+6)
	headers = append(headers, msg.Headers...)
	headers = append(headers,
		pipeline.Header{Key: HeaderErrorsException, Value: []byte(exception)},
		pipeline.Header{Key: HeaderErrorsMessage, Value: capErrorHeader(message)},
		// Go errors carry no stack; the whole chain (with the Lua traceback, when the
		// runtime gives one) is the closest thing.
		pipeline.Header{Key: HeaderErrorsStacktrace, Value: capErrorHeader(err.Error())},
		pipeline.Header{Key: HeaderErrorsTopic, Value: []byte(msg.Topic)},
		pipeline.Header{Key: HeaderErrorsPartition, Value: []byte(strconv.Itoa(int(msg.Partition)))},
		pipeline.Header{Key: HeaderErrorsOffset, Value: []byte(strconv.FormatInt(msg.Offset, 10))},
	)
	return &deadLetter{key: msg.Key, value: msg.Value, timestamp: msg.Timestamp, headers: headers,
		record: fmt.Sprintf("%s-%d@%d", msg.Topic, msg.Partition, msg.Offset)}
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

// sendDeadLetter queues a dead letter in the current epoch, through out; source is the
// record being processed, if any. With the embedded broker the agent creates the topic if
// it is missing, as it creates sinks; elsewhere it must exist. Dead letters are rare, so the
// check is not cached.
func (l *loop) sendDeadLetter(out recordSender, d *deadLetter, source *pipeline.SourceRecord) error {
	topic := l.a.cfg.DeadLetterQueueTopic()
	if l.k.embedded != nil {
		adminCfg, err := kafkaio.SaramaConfig(l.a.cfg, kafkaio.RoleAdmin)
		if err != nil {
			return err
		}
		spec := kafkaio.TopicSpec{Partitions: l.a.cfg.EmbeddedPartitions, ReplicationFactor: -1}
		if err := kafkaio.EnsureTopics(l.k.brokers, adminCfg, map[string]kafkaio.TopicSpec{topic: spec}); err != nil {
			return fmt.Errorf("dead-letter topic: %w", err)
		}
	}
	err := out.Send(topic, -1, d.key, d.value, d.headers, d.timestamp, source)
	var pe *kafkaio.ProduceError
	if errors.As(err, &pe) && pe.Unsent {
		// Larger than max.request.size even with its error headers capped (the record
		// itself is): it would fail the same way after every restart. Refused before it
		// was sent, it harms nothing else, so it is dropped and counted like the record.
		l.a.log.Error("dropping a dead letter that cannot be sent", "record", d.record, "topic", topic, "err", pe.Err)
		l.a.metrics.RecordsDropped.WithLabelValues("", metrics.DropDeadLetter).Inc()
		return nil
	}
	if err != nil {
		return fmt.Errorf("dead-letter topic %s: %w", topic, err)
	}
	return nil
}

// writeFailedDeadLetter makes the dead letter of the record that stops the application
// durable after its epoch was dropped: under exactly-once in a transaction of its own
// (the epoch's was aborted), under at-least-once with a flush. A restart processes the
// record again and writes its dead letter again.
func (e *epoch) writeFailedDeadLetter(cause error) {
	var fr *failedRecord
	if !errors.As(cause, &fr) || fr.letter == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.KafkaWait())
	defer cancel()
	err := e.begin()
	if err == nil {
		err = e.sendLetter(fr.letter)
	}
	if err == nil && e.eos {
		err = e.k.producer.CommitTxn(ctx, nil, e.cfg.ApplicationID)
		e.inTxn = false
	} else if err == nil {
		err = e.k.producer.Flush(ctx)
	}
	if err != nil {
		e.log.Error("the dead letter of the failed record was not written", "topic", e.cfg.DeadLetterQueueTopic(), "err", err)
	}
}

// skippedSends holds the dead letters of records the production exception handler skipped.
// The handler runs as the producer's OnFailure, which must not send, so the loop sends them
// at the commit barrier.
type skippedSends struct {
	mu      sync.Mutex
	letters []*deadLetter
}

// handleProductionErrors installs the production exception handler when it is
// LogAndContinue. Only at-least-once: the config refuses it under exactly-once.
func (l *loop) handleProductionErrors() {
	if l.epoch.eos || !l.a.cfg.ContinueOnProductionError() {
		return
	}
	l.k.producer.OnFailure = l.continueOnProductionError
}

// continueOnProductionError skips a record the broker refused for good (a record over the
// topic's max.message.bytes included: the producer splits a larger batch, so only the
// record itself is refused). A retriable error still drops the epoch, and a record that no
// consumed record produced (a changelog record, a dead letter) still stops the
// application: skipping it would lose state or a letter.
func (l *loop) continueOnProductionError(pe *kafkaio.ProduceError) bool {
	dlq := l.a.cfg.DeadLetterQueueTopic()
	if pe.Source == nil || pe.Retriable() || (dlq != "" && pe.Topic == dlq) {
		return false
	}
	src := pe.Source
	l.a.log.Warn("skipping a record the production exception handler continued on",
		"record", fmt.Sprintf("%s-%d@%d", src.Topic, src.Partition, src.Offset), "topic", pe.Topic, "err", pe.Err)
	// Which sink sent it is not known here (several may write one topic).
	l.a.metrics.RecordsDropped.WithLabelValues("", metrics.DropProduction).Inc()
	if dlq != "" {
		// As in Kafka Streams, the dead letter is the consumed record that produced it.
		letter := newDeadLetter(src, ExceptionProduction, pe)
		l.epoch.skipped.mu.Lock()
		l.epoch.skipped.letters = append(l.epoch.skipped.letters, letter)
		l.epoch.skipped.mu.Unlock()
	}
	return true
}

// sendSkipped sends the dead letters of the records skipped since the last call and waits
// for them. It runs after the epoch's flush, so every failure of the epoch is known.
func (e *epoch) sendSkipped(ctx context.Context) error {
	if sent, err := e.sendLetters(); err != nil || sent == 0 {
		return err
	}
	return e.k.producer.Flush(ctx)
}

// sendLetters sends the dead letters of the records skipped since the last call, in the
// epoch, and says how many there were.
func (e *epoch) sendLetters() (int, error) {
	e.skipped.mu.Lock()
	letters := e.skipped.letters
	e.skipped.letters = nil
	e.skipped.mu.Unlock()
	for _, d := range letters {
		if err := e.sendLetter(d); err != nil {
			return 0, err
		}
	}
	return len(letters), nil
}

// any reports whether dead letters wait to be sent.
func (s *skippedSends) any() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.letters) > 0
}

// dropSkipped forgets the dead letters of a dropped epoch: its records are processed again.
func (e *epoch) dropSkipped() {
	e.skipped.mu.Lock()
	e.skipped.letters = nil
	e.skipped.mu.Unlock()
}
