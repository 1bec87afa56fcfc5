package conformance

import (
	"errors"
	"fmt"
	"regexp"
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
