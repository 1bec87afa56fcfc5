package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
)

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
		reason, exception, cont = metrics.DropProduction, pipeline.ExceptionProduction, l.a.cfg.ContinueOnProductionError()
	case pe != nil || errors.Is(err, kafkaio.ErrFenced):
		return err
	case errors.As(err, &de):
		reason, exception, node, cont = metrics.DropDeserialization, pipeline.ExceptionDeserialization, b.SourceNode(msg.Topic), l.a.cfg.ContinueOnDeserializationError()
	case errors.As(err, &ne):
		reason, exception, node, cont = metrics.DropProcessing, pipeline.ExceptionProcessing, ne.Node, l.a.cfg.ContinueOnProcessingError()
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
// timestamp, with the engine's dead-letter headers (pipeline.DeadLetterHeaders, which
// `stoatflow test` writes too).
func newDeadLetter(msg *pipeline.SourceRecord, exception string, err error) *deadLetter {
	return &deadLetter{key: msg.Key, value: msg.Value, timestamp: msg.Timestamp, headers: pipeline.DeadLetterHeaders(msg, exception, err),
		record: fmt.Sprintf("%s-%d@%d", msg.Topic, msg.Partition, msg.Offset)}
}

// HeaderTruncated marks a dead letter whose key and value were cut to fit max.request.size;
// its value is the original sizes, "key=N,value=M" (-1 for a null). Kafka Streams has no
// such case: its producer would fail the letter.
const HeaderTruncated = "__stoatflow.errors.truncated"

// truncated is d with its key and value cut so that the letter fits maxBytes: each keeps
// at least half of the room its headers leave, and a short one leaves the rest to the
// other. The coordinates of the record are in the headers already.
func (d *deadLetter) truncated(maxBytes int) *deadLetter {
	headers := append(slices.Clip(d.headers), pipeline.Header{Key: HeaderTruncated,
		Value: fmt.Appendf(nil, "key=%d,value=%d", nullableLen(d.key), nullableLen(d.value))})
	room := max(maxBytes-kafkaio.RecordSize(0, 0, headers), 0)
	keyBytes := min(len(d.key), max(room/2, room-len(d.value)))
	valueBytes := min(len(d.value), room-keyBytes)
	out := *d
	out.key, out.value, out.headers = cutBytes(d.key, keyBytes), cutBytes(d.value, valueBytes), headers
	return &out
}

func nullableLen(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// cutBytes is the first n bytes of b; a null stays null.
func cutBytes(b []byte, n int) []byte {
	if b == nil {
		return nil
	}
	return b[:n:n]
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
	if errors.As(err, &pe) && pe.Unsent && errors.Is(err, kafkaio.ErrRecordTooLarge) {
		// Larger than max.request.size even with its error headers capped: the record
		// itself is. Its key and value are cut to fit, and the letter says so; it names the
		// record (topic, partition, offset) in its headers, so the whole can be read there.
		cut := d.truncated(int(config.MaxRequestSize.Get(l.a.cfg.Client(config.ForProducer))))
		l.a.log.Warn("the dead letter is larger than max.request.size: its key and value are cut", "record", d.record, "topic", topic,
			"key bytes", len(d.key), "value bytes", len(d.value))
		err = out.Send(topic, -1, cut.key, cut.value, cut.headers, cut.timestamp, source)
	}
	if errors.As(err, &pe) && pe.Unsent {
		// Refused before it was sent, even cut: it would fail the same way after every
		// restart, and it harms nothing else, so it is dropped and counted like the record.
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
		letter := newDeadLetter(src, pipeline.ExceptionProduction, pe)
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
