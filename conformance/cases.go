package conformance

import (
	"fmt"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Values of the cases: short words (some of three letters, which several filters single
// out), a value that makes processing_error's mapper throw, strings with invalid UTF-8.
var (
	vals     = oneOf(0.15, "fox", "jumps", "a", "lazy dog", "", "over")
	tableVal = oneOf(0.2, "fox", "jumps", "a", "lazy dog", "over")
	fkVal    = pair(0.15, oneOf(0.2, "a", "b", "c"), oneOf(0, "x", "yy"))
	utf8Val  = oneOf(0.1, "ok", "caf\xc3\xa9", "\xff\xfe", "a\x80b", "\xc3", "\xed\xa0\x80")
	boomVal  = oneOf(0.1, "fox", "a", "boom", "jumps", "boom2")
	// longs now and then of the wrong size: a deserialization error.
	badLong = func() Gen {
		good := longIn(0.1, -50, 50)
		return func(r randSource) []byte {
			if r.IntN(25) == 0 {
				return []byte{1, 2, 3}
			}
			return good(r)
		}
	}()
)

// versionedOp is an operation of versioned_store_ops on its store: "x@ts" or "y@ts" puts x
// or y at ts, "n@ts" puts null, "d@ts" deletes. The times are few, so that puts meet at one
// time, and sit about the 2,000 ms segment boundaries of Kafka's store for its history
// retention of 4,500 ms, rarely past 6,500 ms, where the first segment expires.
func versionedOp(r randSource) []byte {
	ops := []string{"x", "x", "y", "n", "d"}
	bases := []int64{0, 0, 0, 1998, 1998, 1998, 3998, 3998, 3998, 6600}
	return fmt.Appendf(nil, "%s@%d", ops[r.IntN(len(ops))], bases[r.IntN(len(bases))]+r.Int64N(6))
}

// versionedOpProbes are the times versioned_store_ops reads its store at (the Lua and Java
// processors read at the same): every time versionedOp names and the one after, and one
// between each two groups.
func versionedOpProbes() []int64 {
	var ts []int64
	for _, base := range []int64{0, 1998, 3998, 6600} {
		for d := range int64(7) {
			ts = append(ts, base+d)
		}
	}
	return append(ts, 1000, 3000, 5000)
}

// nonNullKeys are keys without null, for cases whose windows close on the watermark: a
// null-key record, which a windowed aggregation drops, advances StoatFlow's watermark but not
// Kafka's observed stream time of the operators after the aggregation, so the two close
// windows at different records (the global watermark, a documented difference: DESIGN §5;
// suppress_window_close_null_keys shows it, and that task time has none).
var nonNullKeys = oneOf(0, "a", "b", "c", "d", "e")

func one(name string, value Gen) []Topic { return []Topic{{Name: name, Key: keys, Value: value}} }

func two(a, b string, va, vb Gen) []Topic {
	return []Topic{{Name: a, Key: keys, Value: va}, {Name: b, Key: keys, Value: vb}}
}

// Cases are the conformance cases, each the twin of conformance/java's case of that name
// and of conformance/cases/NAME.lua.
var Cases = []*Case{
	// Stateless operators, split, merge, repartition, serdes.
	{Name: "wordcount", Inputs: one("text-lines", words(0.1))},
	{Name: "stateless_chain", Inputs: one("in", vals)},
	{Name: "split_branch", Inputs: one("in", vals)},
	{Name: "merge", Inputs: two("left", "right", vals, vals)},
	{Name: "topic_extractor", Inputs: one("in", vals), Differences: []Difference{lambdaExtractor}},
	{Name: "invalid_utf8", Inputs: one("in", utf8Val)},
	{Name: "repartition", Inputs: one("in", vals)},
	{Name: "long_values", Inputs: one("in", longIn(0.1, -50, 50))},
	{Name: "processing_error", Inputs: one("in", boomVal)},
	{Name: "deserialization_error", Inputs: one("in", badLong)},
	{Name: "processing_error_continue", Inputs: one("in", boomVal), Differences: []Difference{deadLetterErrors},
		Handlers: pipeline.ExceptionHandlers{ContinueOnProcessingError: true, DeadLetterQueueTopic: dlqTopic}},
	{Name: "deserialization_error_continue", Inputs: one("in", badLong), Differences: []Difference{deadLetterErrors},
		Handlers: pipeline.ExceptionHandlers{ContinueOnDeserializationError: true, DeadLetterQueueTopic: dlqTopic}},

	// Aggregations of streams and tables, cogroups.
	{Name: "reduce_concat", Inputs: one("in", vals)},
	{Name: "aggregate_groupby", Inputs: one("in", vals)},
	{Name: "table_groupby_count", Inputs: one("in", tableVal)},
	{Name: "table_groupby_null_key", Inputs: one("in", tableVal)},
	{Name: "table_groupby_reduce", Inputs: one("nums", longIn(0.2, -20, 20))},
	{Name: "table_groupby_aggregate", Inputs: one("in", tableVal)},
	{Name: "cogroup", Inputs: two("a", "b", vals, vals)},
	{Name: "cogroup_windowed", Inputs: two("a", "b", vals, oneOf(0.1, "a", "b", "c"))},
	{Name: "to_table", Inputs: one("in", vals)},
	{Name: "table_filter_mapvalues", Inputs: one("in", tableVal)},
	{Name: "versioned_count", Inputs: one("in", vals)},

	// Windows, suppression, emit on window close.
	{Name: "tumbling_count", Inputs: one("in", vals)},
	{Name: "hopping_aggregate", Inputs: one("in", vals)},
	{Name: "tumbling_nograce_reduce", Inputs: one("in", vals)},
	{Name: "sliding_count", Inputs: one("in", vals)},
	{Name: "sliding_aggregate", Inputs: one("in", vals)},
	{Name: "session_reduce", Inputs: one("in", vals)},
	{Name: "session_count", Inputs: one("in", vals)},
	{Name: "session_aggregate", Inputs: one("in", vals)},
	{Name: "suppress_window_close", Inputs: []Topic{{Name: "in", Key: nonNullKeys, Value: vals}}},
	// suppress_window_close on keys that may be null: the global watermark's difference, none
	// in task time.
	{Name: "suppress_window_close_null_keys", Inputs: one("in", vals), Differences: []Difference{watermarkClose(nullKey, true)}},
	{Name: "suppress_time_limit", Inputs: one("in", vals)},
	{Name: "emit_on_window_close", Inputs: one("in", vals), Differences: []Difference{emitNoHeaders, watermarkClose(nullKey, true), expiredBeforeEmit("final", 100+20, startAfterAt), emittedDeleted("final")}},
	{Name: "sliding_emit_on_close", Inputs: one("in", vals), Differences: []Difference{emitNoHeaders, watermarkClose(nullKeyOrValue, false), expiredBeforeEmit("slfinal", 2*50+10, startAfterAt), emittedDeleted("slfinal")}},
	{Name: "filtered_emit_on_close", Inputs: two("a", "b", vals, vals), Differences: []Difference{emitNoHeaders, watermarkClose(filteredOut, true), expiredBeforeEmit("filtered", 100+20, startAfterAt), emittedDeleted("filtered")}},
	{Name: "session_emit_on_close", Inputs: one("in", vals), Differences: []Difference{emitNoHeaders, watermarkClose(nullKey, false)}},

	// Joins.
	{Name: "stream_stream_join", Inputs: two("left", "right", vals, vals)},
	{Name: "stream_stream_left_join", Inputs: two("left", "right", vals, vals), Differences: []Difference{joinBuffer("KSTREAM-OUTERSHARED-0000000004-store")}},
	{Name: "stream_stream_outer_join", Inputs: two("left", "right", vals, vals), Differences: []Difference{joinBuffer("KSTREAM-OUTERSHARED-0000000004-store")}},
	{Name: "stream_table_join", Inputs: two("orders", "users", vals, tableVal)},
	{Name: "stream_table_left_join", Inputs: two("orders", "users", vals, tableVal)},
	{Name: "table_table_join", Inputs: two("left", "right", tableVal, tableVal)},
	{Name: "table_table_left_join", Inputs: two("left", "right", tableVal, tableVal)},
	{Name: "table_table_outer_join", Inputs: two("left", "right", tableVal, tableVal)},
	{Name: "fk_join", Inputs: []Topic{{Name: "orders", Key: keys, Value: fkVal, Weight: 2}, {Name: "customers", Key: oneOf(0.1, "a", "b", "c"), Value: tableVal}}},
	{Name: "fk_left_join", Inputs: []Topic{{Name: "orders", Key: keys, Value: fkVal, Weight: 2}, {Name: "customers", Key: oneOf(0.1, "a", "b", "c"), Value: tableVal}}},
	{Name: "global_join", Inputs: two("orders", "rates", oneOf(0.1, "a", "b", "c", "x"), tableVal)},
	{Name: "global_left_join", Inputs: two("orders", "rates", vals, tableVal)},
	{Name: "versioned_stream_table_join", Inputs: two("orders", "prices", vals, tableVal)},
	{Name: "versioned_grace_join", Inputs: []Topic{{Name: "orders", Key: oneOf(0, "a", "b", "c"), Value: vals}, {Name: "prices", Key: keys, Value: tableVal}}},
	{Name: "versioned_table_ops", Inputs: one("prices", tableVal)},
	{Name: "versioned_store_ops", Inputs: []Topic{{Name: "in", Key: oneOf(0.05, "a", "b"), Value: versionedOp}},
		ProbeTimes: versionedOpProbes(), Differences: []Difference{processorValidTo}},

	// The Processor API, punctuation, headers.
	{Name: "punctuate_stream_time", Inputs: one("in", vals)},
	{Name: "punctuate_wall_clock", Inputs: one("in", vals), Wall: true},
	{Name: "headers_store", Inputs: one("in", vals)},
	{Name: "headers_partitioner", Inputs: one("in", vals)},
}
