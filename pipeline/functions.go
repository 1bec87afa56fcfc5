package pipeline

// The callback shapes of the DSL. Each receives the whole record so that callbacks can see
// the record context (timestamp, topic, partition, offset, headers), as Lua callbacks do.
type (
	// Predicate decides whether a record passes (filter, filterNot, branch).
	Predicate func(rec Record) (bool, error)
	// ValueMapper computes a new value (mapValues) or a new key (selectKey).
	ValueMapper func(rec Record) (any, error)
	// KeyValueMapper computes a new key and value (map).
	KeyValueMapper func(rec Record) (key, value any, err error)
	// FlatMapper computes zero or more key-value pairs (flatMap).
	FlatMapper func(rec Record) ([]KeyValue, error)
	// FlatValueMapper computes zero or more values (flatMapValues).
	FlatValueMapper func(rec Record) ([]any, error)
	// ForeachAction observes a record (foreach, peek).
	ForeachAction func(rec Record) error
	// TopicNameExtractor chooses a sink topic per record.
	TopicNameExtractor func(rec Record) (string, error)
	// StreamPartitioner chooses the partitions a sink writes a record to. ok=false asks for the
	// default partitioner; an empty list with ok=true drops the record (counted), as in
	// Kafka Streams.
	StreamPartitioner func(topic string, rec Record, numPartitions int32) (partitions []int32, ok bool, err error)
)

// KeyValue is one pair produced by a FlatMapper.
type KeyValue struct {
	Key   any
	Value any
}
