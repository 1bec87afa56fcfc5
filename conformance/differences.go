package conformance

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/stoatflow/stoatflow/pipeline"
)

// The documented differences (docs/COMPATIBILITY.md) the cases show.

var extractorClass = regexp.MustCompile(`\(extractor class: [^)\n]*\)`)

// lambdaExtractor: describe() prints a topic extractor's class, which for Java is a
// lambda's generated name and for StoatFlow a Lua function's.
var lambdaExtractor = Difference{Name: "a topic extractor's class in describe()", Apply: func(_ Input, java, ours *Result) error {
	if !extractorClass.MatchString(java.Describe) || !extractorClass.MatchString(ours.Describe) {
		return errors.New("both descriptions should name the extractor class")
	}
	java.Describe = extractorClass.ReplaceAllString(java.Describe, "(extractor class: ...)")
	ours.Describe = extractorClass.ReplaceAllString(ours.Describe, "(extractor class: ...)")
	return nil
}}

// emitNoHeaders: "the emitted records carry no headers (Kafka Streams uses the triggering
// record's)" (TimeWindowedKStream.emitStrategy).
var emitNoHeaders = Difference{Name: "emit-on-window-close results carry no headers", Apply: func(_ Input, java, ours *Result) error {
	for step, rs := range ours.Outputs {
		for i, r := range rs {
			if len(r.Headers) != 0 {
				return fmt.Errorf("step %d: StoatFlow's result %d has headers %s", step, i, fmtHeaders(r.Headers))
			}
		}
	}
	for _, rs := range java.Outputs {
		for i := range rs {
			rs[i].Headers = nil
		}
	}
	return nil
}}

// dlqTopic is the dead-letter topic of the cases that have one (Errors.DLQ in Java).
const dlqTopic = "dlq"

// deadLetterErrors: of a dead letter's headers, __streams.errors.exception names the kind of
// error (stoatflow.DeserializationError or stoatflow.ProcessingError) where Kafka Streams puts
// the Java exception's class, and __streams.errors.message and __streams.errors.stacktrace
// hold the Go error chain (a Lua error with its file:line) where Java puts the exception's
// message and stack trace (errors.dead.letter.queue.topic.name in docs/COMPATIBILITY.md).
// The check: every dead letter on either side has the three; StoatFlow's exception is one of
// its two names and its message and stacktrace are not empty. Their values are then blanked
// on both sides, and everything else (the record, the other headers, the headers' names and
// order) is compared as it is.
var deadLetterErrors = Difference{Name: "dead letters' exception, message and stacktrace headers", Apply: func(_ Input, java, ours *Result) error {
	jvmSpecific := map[string]bool{pipeline.HeaderErrorsException: true, pipeline.HeaderErrorsMessage: true, pipeline.HeaderErrorsStacktrace: true}
	blank := func(side string, r Record, check func(h pipeline.Header) error) error {
		seen := 0
		for i, h := range r.Headers {
			if !jvmSpecific[h.Key] {
				continue
			}
			seen++
			if err := check(h); err != nil {
				return fmt.Errorf("%s's dead letter %s: %w", side, fmtRecordAt([]Record{r}, 0), err)
			}
			r.Headers[i].Value = []byte("(normalised)")
		}
		if seen != len(jvmSpecific) {
			return fmt.Errorf("%s's dead letter %s lacks an error header", side, fmtRecordAt([]Record{r}, 0))
		}
		return nil
	}
	ourCheck := func(h pipeline.Header) error {
		v := string(h.Value)
		switch {
		case h.Key == pipeline.HeaderErrorsException && v != pipeline.ExceptionDeserialization && v != pipeline.ExceptionProcessing:
			return fmt.Errorf("exception %q is not one of StoatFlow's names", v)
		case v == "":
			return fmt.Errorf("header %s is empty", h.Key)
		}
		return nil
	}
	for side, res := range map[string]*Result{"Kafka Streams": java, "StoatFlow": ours} {
		check := func(pipeline.Header) error { return nil }
		if res == ours {
			check = ourCheck
		}
		for _, rs := range res.Outputs {
			for _, r := range rs {
				if r.Topic != dlqTopic {
					continue
				}
				if err := blank(side, r, check); err != nil {
					return err
				}
			}
		}
	}
	return nil
}}

var validToShown = regexp.MustCompile(`(@[0-9]+)-[0-9]+`)

// processorValidTo: a versioned store's get and delete give a processor the record's validTo
// (nil for the latest version) where Kafka Streams 4.4's processor store always gives an
// empty one (its metered layer keeps only value and timestamp); the store's own answers,
// which the store dump compares, carry it on both sides. The check: no validTo in Kafka's
// outputs ("value@ts-" as versioned_store_ops writes a record); ours is then dropped.
var processorValidTo = Difference{Name: "a processor's versioned get and delete give validTo", Apply: func(_ Input, java, ours *Result) error {
	for step, rs := range java.Outputs {
		for i, r := range rs {
			if validToShown.Match(r.Value) {
				return fmt.Errorf("step %d: Kafka's output %d has a validTo: %q", step, i, r.Value)
			}
		}
	}
	for _, rs := range ours.Outputs {
		for i := range rs {
			rs[i].Value = validToShown.ReplaceAll(rs[i].Value, []byte("$1-"))
		}
	}
	return nil
}}
