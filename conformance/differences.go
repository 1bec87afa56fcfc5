package conformance

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"

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

// watermarkClose: windowed operators close their windows on the global watermark (DESIGN
// §5), which under one task with every partition idle is the largest timestamp of every
// record read; Kafka Streams closes them on the operator's own stream time, the largest
// timestamp of the records that reached it. Records the operator never sees (unseen: those
// a filter or the operator itself drops before taking their time) move only the watermark,
// so a final result can come out earlier than in Kafka, and a record the operator's stream
// time would still accept for a window the watermark has closed is dropped (window-closed)
// instead of revising it (nor is a sliding window made that would only hold records
// already in final results). The check: StoatFlow without the unseen records gives exactly
// Kafka's result (compared after Apply); and, for time windows (fixed, so one closing early
// changes no other), with a last record appended that closes every window, each final
// result StoatFlow emits with them it also emits without them, the same and no later,
// unless it dropped records as window-closed. Sessions and sliding windows close early with
// consequences of their own (a record within the gap of an emitted session starts a new
// one; a sliding window is seeded without an emitted one), so only the first check holds.
func watermarkClose(unseen func(Step) bool, timeWindows bool) Difference {
	return Difference{Name: "windows close on the global watermark", Unseen: unseen, GlobalWatermark: true, Apply: func(in Input, _, ours *Result) error {
		seen := ours.Unseen
		for _, r := range []*Result{seen, ours.Flushed, seen.Flushed} {
			if r.Fatal != "" || r.ErrorStep >= 0 {
				return fmt.Errorf("a run to check the difference failed: %s%s", r.Fatal, r.Error)
			}
		}
		if seen.Flushed.WindowClosed != 0 {
			return fmt.Errorf("without the records the operator never sees, the watermark is its stream time, yet %d records were dropped as window-closed", seen.Flushed.WindowClosed)
		}
		if timeWindows && ours.Flushed.WindowClosed == 0 {
			flushed := in
			flushed.Steps = append(slices.Clip(in.Steps), flushStep(in))
			if err := earlierOrSame(flushed, ours.Flushed, seen.Flushed); err != nil {
				return err
			}
		}
		*ours = *seen
		return nil
	}}
}

// finalAt is one output record and the input step that produced it.
type finalAt struct {
	step int
	rec  Record
}

// earlierOrSame checks that each final result of all (the run of the whole input) is one
// of seen (the run without the unseen records), no later in all than in seen.
func earlierOrSame(in Input, all, seen *Result) error {
	byKey := func(r *Result) map[string][]finalAt {
		m := map[string][]finalAt{}
		for step := range in.Steps {
			for _, rec := range r.Outputs[step] {
				k := rec.Topic + "\x00" + string(rec.Key)
				m[k] = append(m[k], finalAt{step, rec})
			}
		}
		return m
	}
	a, s := byKey(all), byKey(seen)
	for k, as := range a {
		ss := s[k]
		for i, x := range as {
			if i >= len(ss) || !sameRecord(x.rec, ss[i].rec) {
				return fmt.Errorf("step %d: StoatFlow emitted %s, which it does not emit without the records the operator never sees", x.step, fmtRecordAt([]Record{x.rec}, 0))
			}
			if y := ss[i]; x.step > y.step {
				return fmt.Errorf("step %d: StoatFlow emitted %s later than without the records the operator never sees (step %d)", x.step, fmtRecordAt([]Record{x.rec}, 0), y.step)
			}
		}
	}
	return nil
}

// nullKey picks the records with a null key: the windowed aggregations drop them before they
// take their time.
func nullKey(s Step) bool { return s.Key == nil }

// nullKeyOrValue picks the records a sliding-window aggregation drops before it takes their
// time.
func nullKeyOrValue(s Step) bool { return s.Key == nil || s.Value == nil }

// expiredBeforeEmit: Kafka Streams 4.4 loses the final result of a window that a record moves
// past its store's retention before the window is emitted: the aggregation writes the
// record's windows first, which advances the store's stream time (the largest window start
// put), and the emission then reads the store, which no longer shows a window starting
// before stream time − retention + 1. StoatFlow keeps every window until its final result
// is out. The check: Kafka's final results at each step are StoatFlow's, in order, less
// some whose window (its start read from the output record by start) starts before
// StoatFlow's store stream time at that step − retention + 1; those are dropped from
// StoatFlow's side.
func expiredBeforeEmit(store string, retention int64, start func(Record) (int64, error)) Difference {
	return Difference{Name: "no final result lost to the store's retention", Apply: func(in Input, java, ours *Result) error {
		for step := range in.Steps {
			j, o := java.Outputs[step], ours.Outputs[step]
			var kept []Record
			k := 0
			for _, r := range o {
				if k < len(j) && sameRecord(j[k], r) {
					kept = append(kept, r)
					k++
					continue
				}
				s, err := start(r)
				if err != nil {
					return fmt.Errorf("step %d: %w", step, err)
				}
				st, ok := ours.StoreTimes[step][store]
				if !ok || s >= st-retention+1 {
					return fmt.Errorf("step %d: Kafka Streams does not emit %s, though its window starting at %d is within the retention of store %s (stream time %d, retention %d)",
						step, fmtRecordAt([]Record{r}, 0), s, store, st, retention)
				}
			}
			if k < len(j) {
				return fmt.Errorf("step %d: Kafka Streams emits %s, StoatFlow does not", step, fmtRecordAt(j, k))
			}
			if len(kept) != len(o) {
				ours.Outputs[step] = kept
			}
		}
		return nil
	}}
}

// startAfterAt reads a window start written as the output key "key@start".
func startAfterAt(r Record) (int64, error) {
	i := bytes.LastIndexByte(r.Key, '@')
	if i < 0 {
		return 0, fmt.Errorf("output key %s is not key@start", fmtBytes(r.Key))
	}
	return strconv.ParseInt(string(r.Key[i+1:]), 10, 64)
}

// filteredOut picks the records filtered_emit_on_close's filter drops (values of three
// letters) and those its aggregation drops (null keys).
func filteredOut(s Step) bool { return s.Key == nil || len(s.Value) == 3 }

// joinBuffer: the outer-join buffer of a left or outer stream-stream join keeps, under
// Kafka's key layout ([ts][side][key]), one entry per key with its values as a list of
// length-prefixed values, where Kafka's ListValueStore lists each value as an entry of its
// own, [side][value] (LeftOrRightValue). StoatFlow's entries are rewritten to Kafka's shape
// before the stores are compared.
func joinBuffer(store string) Difference {
	return Difference{Name: "the outer-join buffer's value layout", Apply: func(_ Input, _, ours *Result) error {
		for i, s := range ours.Stores {
			if s.Name != store {
				continue
			}
			var entries []Entry
			for _, e := range s.Entries {
				if len(e.Key) < 9 {
					return fmt.Errorf("store %s: key %s is shorter than [ts][side]", store, fmtBytes(e.Key))
				}
				for rest := e.Value; len(rest) > 0; {
					if len(rest) < 4 || int(binary.BigEndian.Uint32(rest)) > len(rest)-4 {
						return fmt.Errorf("store %s: key %s: %s is no list of length-prefixed values", store, fmtBytes(e.Key), fmtBytes(e.Value))
					}
					n := int(binary.BigEndian.Uint32(rest))
					v := append([]byte{e.Key[8]}, rest[4:4+n]...)
					entries = append(entries, Entry{Key: e.Key, Start: e.Start, End: e.End, Value: v, TS: e.TS, Headers: e.Headers})
					rest = rest[4+n:]
				}
			}
			ours.Stores[i].Entries = entries
			return nil
		}
		return fmt.Errorf("StoatFlow has no store %s", store)
	}}
}

// emittedDeleted: StoatFlow deletes a window from the store once its final result is out
// (the deletion, in the changelog, keeps a store restored from it from emitting the window
// again), where Kafka Streams keeps it until the retention drops it. The check: every entry
// of Kafka's store (store) that StoatFlow's lacks is a window StoatFlow emitted (output key
// key@start); those are dropped from Kafka's side.
func emittedDeleted(store string) Difference {
	return Difference{Name: "an emitted window is deleted from the store", Apply: func(in Input, java, ours *Result) error {
		emitted := map[string]bool{}
		for step := range in.Steps {
			for _, r := range ours.Outputs[step] {
				s, err := startAfterAt(r)
				if err != nil {
					return err
				}
				emitted[string(r.Key[:bytes.LastIndexByte(r.Key, '@')])+"\x00"+strconv.FormatInt(s, 10)] = true
			}
		}
		entryKey := func(e Entry) string { return string(e.Key) + "\x00" + strconv.FormatInt(e.Start, 10) }
		var ourStore *Store
		for i := range ours.Stores {
			if ours.Stores[i].Name == store {
				ourStore = &ours.Stores[i]
			}
		}
		if ourStore == nil {
			return fmt.Errorf("StoatFlow has no store %s", store)
		}
		held := map[string]bool{}
		for _, e := range ourStore.Entries {
			held[entryKey(e)] = true
		}
		for i := range java.Stores {
			s := &java.Stores[i]
			if s.Name != store {
				continue
			}
			var kept []Entry
			for _, e := range s.Entries {
				k := entryKey(e)
				switch {
				case held[k]:
					kept = append(kept, e)
				case !emitted[k]:
					return fmt.Errorf("store %s: Kafka Streams holds %s, which StoatFlow neither holds nor emitted", store, fmtEntryAt([]Entry{e}, 0))
				}
			}
			s.Entries = kept
		}
		return nil
	}}
}

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
