package kafkaio

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

// committedReader turns the fetch responses of one partition into the records a
// read_committed consumer sees: control batches (transaction markers) and the batches of
// aborted transactions are skipped, and the position moves past them too.
type committedReader struct {
	topic     string
	partition int32
	next      int64 // the offset to fetch next
}

// controlAbort is the type of an abort marker in a control record's key (version int16,
// type int16; 1 is a commit marker).
const controlAbort = 0

// read returns the committed records of one response block at or after r.next and moves
// r.next past every complete batch of the block, delivered or not. A block whose first
// batch is incomplete moves nothing and reports partial: fetch again with more bytes.
func (r *committedReader) read(block *sarama.FetchResponseBlock) (msgs []pipeline.SourceRecord, partial bool, err error) {
	// The broker lists the aborted transactions that overlap the fetched range; a
	// producer's batches are aborted from its FirstOffset to its abort marker.
	aborted := slices.Clone(block.AbortedTransactions)
	slices.SortFunc(aborted, func(a, b *sarama.AbortedTransaction) int {
		return cmp.Compare(a.FirstOffset, b.FirstOffset)
	})
	inAborted := make(map[int64]bool)
	for i, recs := range block.RecordsSet {
		b := recs.RecordBatch
		if b == nil {
			return nil, false, fmt.Errorf("%s/%d at offset %d: not supported yet: message format v0/v1 (before Kafka 0.11)", r.topic, r.partition, r.next)
		}
		if b.PartialTrailingRecord {
			return msgs, i == 0, nil
		}
		for len(aborted) > 0 && aborted[0].FirstOffset <= b.LastOffset() {
			inAborted[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		switch {
		case b.Control:
			abort, err := isAbortMarker(b)
			if err != nil {
				return nil, false, fmt.Errorf("%s/%d at offset %d: %w", r.topic, r.partition, b.FirstOffset, err)
			}
			if abort {
				delete(inAborted, b.ProducerID)
			}
		case b.IsTransactional && inAborted[b.ProducerID]:
		default:
			msgs = r.appendBatch(msgs, b)
		}
		r.next = max(r.next, b.LastOffset()+1)
	}
	return msgs, false, nil
}

func isAbortMarker(b *sarama.RecordBatch) (bool, error) {
	if len(b.Records) == 0 || len(b.Records[0].Key) < 4 {
		return false, fmt.Errorf("control batch without a control record key")
	}
	return binary.BigEndian.Uint16(b.Records[0].Key[2:4]) == controlAbort, nil
}

// appendBatch appends the records of b at or after r.next (a fetch may start inside a
// batch).
func (r *committedReader) appendBatch(msgs []pipeline.SourceRecord, b *sarama.RecordBatch) []pipeline.SourceRecord {
	for _, rec := range b.Records {
		off := b.FirstOffset + rec.OffsetDelta
		if off < r.next {
			continue
		}
		ts := b.FirstTimestamp.Add(rec.TimestampDelta)
		if b.LogAppendTime {
			ts = b.MaxTimestamp
		}
		var headers pipeline.Headers
		if len(rec.Headers) > 0 {
			headers = make(pipeline.Headers, len(rec.Headers))
			for i, h := range rec.Headers {
				headers[i] = pipeline.Header{Key: string(h.Key), Value: h.Value}
			}
		}
		msgs = append(msgs, pipeline.SourceRecord{
			Topic:     r.topic,
			Partition: r.partition,
			Offset:    off,
			Key:       rec.Key,
			Value:     rec.Value,
			Headers:   headers,
			Timestamp: ts.UnixMilli(),
		})
	}
	return msgs
}
