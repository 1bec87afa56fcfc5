package state

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/syndtr/goleveldb/leveldb"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Restore writes changelog records back into a store partition in store format, directly
// to LevelDB in one batch together with lastOffset as the partition's changelog offset.
// Timestamped values get their timestamp back from the record timestamp, and headers-aware
// values their headers from the record headers. The partition must have no buffered writes.
func (db *DB) Restore(spec pipeline.StoreSpec, partition int32, records []ChangelogRecord, lastOffset int64) error {
	s, err := catalogSpecOf(spec)
	if err != nil {
		return err
	}
	p, err := db.open(s, partition)
	if err != nil {
		return err
	}
	if err := db.settle(); err != nil {
		return err
	}
	if p.dirty {
		return p.errorf("restore: the partition has uncommitted writes; commit or abort them first")
	}
	var b leveldb.Batch
	st, seq := p.streamTime.Load(), p.seq
	// A versioned store's records are put by Kafka Streams' put rule, as Kafka Streams
	// restores them, which reads what the records before wrote: they go to the partition's
	// (empty) buffer, which the batch takes at the end.
	var versions *epochBuffer
	putVersion := func(k, v []byte) {
		versions.put(k, v)
		if v[0] == opPut {
			p.scratch = v[:0]
		}
	}
	if s.Type == versionedKind {
		versions = newEpochBuffer(0, 0)
		p.buf.Store(versions)
		defer p.buf.Store(newEpochBuffer(0, 0))
	}
	key := append([]byte{}, p.prefix...)
	var val []byte
	for i, r := range records {
		if r.Key == nil {
			return p.errorf("restore: changelog record %d has a null key", i)
		}
		key = key[:len(p.prefix)]
		val = val[:0]
		tombstone := r.Value == nil
		switch s.Type {
		case keyValueKind:
			key = append(key, r.Key...)
			val = append(val, r.Value...)
		case timestampedKeyValueKind:
			key = append(key, r.Key...)
			val = p.appendTimestampedValue(val, r.Value, r.Timestamp, r.Headers)
		case windowKind:
			k, start, s, err := splitWindowChangelogKey(r.Key)
			if err != nil {
				return p.errorf("restore: changelog record %d: %w", i, err)
			}
			key = appendWindowKey(key, k, start, s)
			val = p.appendTimestampedValue(val, r.Value, r.Timestamp, r.Headers)
			st, seq = max(st, start), max(seq, s)
		case sessionKind:
			k, start, end, err := splitSessionChangelogKey(r.Key)
			if err != nil {
				return p.errorf("restore: changelog record %d: %w", i, err)
			}
			key = appendSessionKey(key, k, start, end)
			val = append(val, r.Value...)
			st = max(st, end)
		case versionedKind:
			// Written by the put rule, into a buffer taken into the batch at the end.
			if _, err := p.putVersion(r.Key, r.Value, r.Timestamp, putVersion); err != nil {
				return fmt.Errorf("restore: changelog record %d: %w", i, err)
			}
			st = max(st, r.Timestamp)
			continue
		default:
			return p.errorf("restore: unknown store kind %s", s.Type)
		}
		if tombstone {
			b.Delete(key)
		} else {
			b.Put(key, val)
		}
	}
	if versions != nil {
		_ = versions.each(func(k, v []byte) error {
			key = append(key[:len(p.prefix)], k...)
			if v[0] == opPut {
				b.Put(key, v[1:])
			} else {
				b.Delete(key)
			}
			return nil
		})
	}
	meta := binary.BigEndian.AppendUint64(make([]byte, 0, 12), uint64(st))
	b.Put(sysPartitionKey(sysPartMeta, p.id, partition, nil), binary.BigEndian.AppendUint32(meta, uint32(seq)))
	b.Put(sysPartitionKey(sysOffset, p.id, partition, nil), binary.BigEndian.AppendUint64(nil, uint64(lastOffset)))
	if err := db.writeData(&b, true); err != nil {
		return fmt.Errorf("state: restore store %q partition %d: %w", spec.Name, partition, err)
	}
	p.setStreamTime(st)
	p.seq, p.committedSeq = seq, seq
	p.lastSweep = math.MinInt64
	return nil
}
