package pipeline

import (
	"fmt"
	"regexp"
)

type sourceSpec struct {
	serdes    Serdes
	extractor TimestampExtractor
	reset     OffsetReset
	pattern   *regexp.Regexp // a pattern source's, anchored at both ends
}

type sourceProc struct {
	ctx  *Context
	spec *sourceSpec
	e2e  Observer
}

func (p *sourceProc) Init(ctx *Context) error {
	p.ctx = ctx
	p.e2e = ctx.endToEnd()
	return nil
}

// Process observes the record's end-to-end latency on entry, after timestamp extraction,
// as Kafka Streams does at source nodes.
func (p *sourceProc) Process(rec Record) error {
	p.e2e.Observe(float64(p.ctx.WallClock()-rec.Timestamp) / 1000)
	return p.ctx.Forward(rec)
}

// DeserializationError marks a record whose key or value could not be read; the
// deserialization exception handler decides its fate.
type DeserializationError struct {
	Part string // "key" or "value"
	Err  error
}

func (e *DeserializationError) Error() string {
	return fmt.Sprintf("cannot deserialize %s: %v", e.Part, e.Err)
}
func (e *DeserializationError) Unwrap() error { return e.Err }

// decode deserialises a source record and extracts its timestamp. keep=false means the
// record was dropped on purpose (negative extracted timestamp) and counted.
func (p *sourceProc) decode(ctx *Context, in SourceRecord) (Record, bool, error) {
	rec := Record{
		Timestamp: in.Timestamp,
		Headers:   in.Headers,
		Topic:     in.Topic,
		Partition: in.Partition,
		Offset:    in.Offset,
	}
	var err error
	if rec.Key, err = p.spec.serdes.Key.Deserialize(in.Topic, in.Headers, in.Key); err != nil {
		return rec, false, &DeserializationError{Part: "key", Err: err}
	}
	if rec.Value, err = p.spec.serdes.Value.Deserialize(in.Topic, in.Headers, in.Value); err != nil {
		return rec, false, &DeserializationError{Part: "value", Err: err}
	}
	if p.spec.extractor == nil {
		// Kafka Streams' default, FailOnInvalidTimestamp.
		if rec.Timestamp < 0 {
			return rec, false, fmt.Errorf("invalid (negative) record timestamp %d; use a timestamp extractor to handle such records", rec.Timestamp)
		}
		return rec, true, nil
	}
	ts, err := p.spec.extractor(rec)
	if err != nil {
		return rec, false, fmt.Errorf("timestamp extractor: %w", err)
	}
	if ts < 0 {
		ctx.Drop(DropNegativeTimestamp)
		return rec, false, nil
	}
	rec.Timestamp = ts
	return rec, true, nil
}
