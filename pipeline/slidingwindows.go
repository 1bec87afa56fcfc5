package pipeline

import (
	"fmt"
)

// SlidingWindows are windows of a fixed time difference d that slide with the records
// (Kafka Streams' SlidingWindows): windows are [s, s + d], both ends inclusive, and only
// windows holding records exist. Times are milliseconds.
type SlidingWindows struct {
	TimeDifference int64
	Grace          int64
}

// Validate applies Kafka Streams' checks: time difference and grace not negative.
func (w SlidingWindows) Validate() error {
	switch {
	case w.TimeDifference < 0:
		return fmt.Errorf("window time difference must not be negative, not %d", w.TimeDifference)
	case w.Grace < 0:
		return fmt.Errorf("grace period must not be negative, not %d", w.Grace)
	}
	return nil
}

// SlidingWindowedKStream is a grouped stream with sliding windows (Kafka Streams'
// TimeWindowedKStream over SlidingWindows).
type SlidingWindowedKStream struct {
	g           *KGroupedStream
	w           SlidingWindows
	emitOnClose bool
}

// EmitOnWindowClose makes the aggregation forward each window once, when the global
// watermark closes it (end + grace < watermark), instead of on every update
// (EmitStrategy.onWindowClose).
func (t *SlidingWindowedKStream) EmitOnWindowClose(onClose bool) { t.emitOnClose = onClose }

// WindowedBySliding adds sliding windows to the grouping.
func (g *KGroupedStream) WindowedBySliding(w SlidingWindows) (*SlidingWindowedKStream, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return &SlidingWindowedKStream{g: g, w: w}, nil
}

// Count counts records per key and window.
func (t *SlidingWindowedKStream) Count(m Materialized, longSerde Serde, name string) (*KTable, error) {
	if m.Given && m.StoreName == "" {
		t.g.s.b.index++
	}
	if m.Serdes.Value == nil {
		m.Serdes.Value = longSerde
	}
	return t.aggregate("KSTREAM-AGGREGATE-", m, name, func() (any, error) { return int64(0), nil },
		func(_ Record, agg any) (any, error) {
			n, _ := agg.(int64)
			return n + 1, nil
		})
}

// Reduce combines values per key and window; a window's first value is its first aggregate.
func (t *SlidingWindowedKStream) Reduce(reducer Aggregator, m Materialized, name string) (*KTable, error) {
	if m.Serdes.Value == nil {
		m.Serdes.Value = t.g.s.serdes.Value
	}
	// Kafka Streams' reduce initializer is null and its aggregator takes the value as the
	// first aggregate.
	return t.aggregate("KSTREAM-REDUCE-", m, name, func() (any, error) { return nil, nil },
		func(rec Record, agg any) (any, error) {
			if agg == nil {
				return rec.Value, nil
			}
			return reducer(rec, agg)
		})
}

// Aggregate folds values per key and window.
func (t *SlidingWindowedKStream) Aggregate(init Initializer, agg Aggregator, m Materialized, name string) (*KTable, error) {
	return t.aggregate("KSTREAM-AGGREGATE-", m, name, init, agg)
}

func (t *SlidingWindowedKStream) aggregate(prefix string, m Materialized, name string, init Initializer, agg Aggregator) (*KTable, error) {
	w, onClose := t.w, t.emitOnClose
	table, err := t.g.aggregateWith(prefix, m, name, func(storeName string, serdes Serdes) (*StoreSpec, error) {
		// Kafka's default retention for sliding windows (SlidingWindowStoreMaterializer),
		// also when emitting on close: the store holds a window the watermark has not
		// closed yet past it (windowHolds).
		retention, err := m.slidingRetention(storeName, w)
		return &StoreSpec{Name: storeName, Type: TimestampedWindowStoreType, Serdes: serdes, Logged: !m.LoggingDisabled, TopicConfig: m.TopicConfig,
			WindowSize: w.TimeDifference, Retention: retention}, err
	}, func(storeName string, oldValues *bool) Processor {
		return &slidingAggregate{store: storeName, windows: w, init: init, agg: agg, oldValues: oldValues,
			emitOnClose: onClose}
	})
	if err != nil {
		return nil, err
	}
	table.serdes.Key = TimeWindowedSerde{Inner: table.serdes.Key, Size: w.TimeDifference}
	return table, nil
}
