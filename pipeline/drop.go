package pipeline

// DropReason says why the engine discarded a record on purpose. Each reason is one series of
// the dropped-records metric (Kafka Streams' dropped-records), which whoever runs the
// topology creates at zero for every reason in DropReasons.
type DropReason uint8

const (
	// DropLate: the record's window is closed on the operator's stream time (end + grace).
	DropLate DropReason = iota
	// DropWindowClosed: the operator's stream time still accepts the record, but the global
	// watermark has closed its window and emitted its final result, which is never revised.
	DropWindowClosed
	DropNullKey
	DropNullValue
	// DropNullForeignKey: a foreign-key join's extractor returned nil for a new row.
	DropNullForeignKey
	// DropNegativeTimestamp: the timestamp extractor returned a negative timestamp.
	DropNegativeTimestamp
	// DropPartitioner: a sink's or repartition's partitioner chose no partition.
	DropPartitioner
	// DropOutOfOrder: a table join skipped an out-of-order update of a versioned table
	// (KIP-914).
	DropOutOfOrder
	// DropStale: a foreign-key join's answer is about a value its row no longer has (Kafka
	// Streams' ResponseJoinProcessorSupplier compares hashes of the value); the answer
	// about the current value follows.
	DropStale
	numDropReasons
)

var dropReasonNames = [numDropReasons]string{
	DropLate:              "late",
	DropWindowClosed:      "window-closed",
	DropNullKey:           "null-key",
	DropNullValue:         "null-value",
	DropNullForeignKey:    "null-foreign-key",
	DropNegativeTimestamp: "negative-timestamp",
	DropPartitioner:       "partitioner",
	DropOutOfOrder:        "out-of-order",
	DropStale:             "stale",
}

// String is the reason as the metric's reason label shows it.
func (r DropReason) String() string { return dropReasonNames[r] }

// DropReasons lists every reason the engine drops records for.
func DropReasons() []DropReason {
	out := make([]DropReason, numDropReasons)
	for i := range out {
		out[i] = DropReason(i)
	}
	return out
}
