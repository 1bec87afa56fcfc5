package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// Commit applies every store partition's buffered writes, their stream times, their
// processor metadata, the expiry of retained data and the given changelog offsets in one
// atomic LevelDB batch, then clears the buffers and the epoch's changelog records. On an
// error nothing is applied and the buffers stay, so the caller can retry or Abort.
func (db *DB) Commit(changelogOffsets map[ChangelogPartition]int64) error {
	b := &db.batch
	b.Reset()
	for cp, off := range changelogOffsets {
		id, ok := db.storeID(cp.Store)
		if !ok {
			return fmt.Errorf("state: commit: changelog offset for unknown store %q", cp.Store)
		}
		b.Put(sysPartitionKey(sysOffset, id, cp.Partition, nil), binary.BigEndian.AppendUint64(nil, uint64(off)))
	}
	var swept []*partition
	for _, p := range db.dirty {
		if err := p.appendBuffer(b); err != nil {
			return err
		}
		did, err := p.appendSweep(b)
		if err != nil {
			return err
		}
		if did {
			swept = append(swept, p)
		}
		p.appendMeta(b)
	}
	if b.Len() > 0 {
		if err := db.writeData(b, false); err != nil {
			return fmt.Errorf("state: commit: %w", err)
		}
	}
	for _, p := range swept {
		p.lastSweep = p.expiryCutoff(p.streamTime.Load())
	}
	for _, p := range db.dirty {
		p.committedStreamTime.Store(p.streamTime.Load())
		p.committedSeq = p.seq
		p.resetBuffer()
	}
	db.endEpoch()
	return nil
}

// Abort drops every buffered write, metadata change and changelog record of the epoch.
func (db *DB) Abort() {
	for _, p := range db.dirty {
		p.streamTime.Store(p.committedStreamTime.Load())
		p.seq = p.committedSeq
		p.resetBuffer()
	}
	db.endEpoch()
}

func (db *DB) endEpoch() {
	clear(db.dirty)
	db.dirty = db.dirty[:0]
	clear(db.changelog)
	db.changelog = db.changelog[:0]
	db.changelogTaken = 0
	db.batch.Reset()
}

// appendBuffer adds the buffered writes; entries that expired during the epoch are
// deleted instead.
func (p *partition) appendBuffer(b *leveldb.Batch) error {
	cutoff := p.expiryCutoff(p.streamTime.Load())
	key := append([]byte{}, p.prefix...)
	return p.buf.Load().each(func(k, v []byte) error {
		key = append(key[:len(p.prefix)], k...)
		expired, err := p.expired(k, cutoff)
		if err != nil {
			return err
		}
		if v[0] == opDelete || expired {
			b.Delete(key)
		} else {
			b.Put(key, v[1:])
		}
		return nil
	})
}

// appendMeta adds the partition's stream time, seqnum and processor metadata.
func (p *partition) appendMeta(b *leveldb.Batch) {
	if p.metaChanged {
		v := binary.BigEndian.AppendUint64(make([]byte, 0, 12), uint64(p.streamTime.Load()))
		b.Put(sysPartitionKey(sysPartMeta, p.id, p.num, nil), binary.BigEndian.AppendUint32(v, uint32(p.seq)))
	}
	for k, v := range p.meta {
		b.Put(sysPartitionKey(sysUserMeta, p.id, p.num, []byte(k)), v)
	}
}

// writeData writes a batch that holds data keys, keeping the read cache in step: a
// commit's values go into it, and the keys of any other batch (restore, wipe) leave it.
// The key filter learns the batch's keys first, so no read finds LevelDB ahead of it.
func (db *DB) writeData(b *leveldb.Batch, drop bool) error {
	db.keys.addBatch(b)
	if db.cache == nil {
		return db.ldb.Write(b, db.wo)
	}
	db.cache.beginWrite()
	err := db.ldb.Write(b, db.wo)
	db.cache.endWrite(b, err == nil, drop)
	return err
}

// ChangelogOffset returns the changelog offset committed with a store partition's data;
// false when none was (the store must be restored from the changelog's start).
func (db *DB) ChangelogOffset(store string, partition int32) (int64, bool, error) {
	id, ok := db.storeID(store)
	if !ok {
		return 0, false, nil
	}
	v, err := db.ldb.Get(sysPartitionKey(sysOffset, id, partition, nil))
	if errors.Is(err, leveldb.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("state: changelog offset of store %q partition %d: %w", store, partition, db.readErr(err))
	}
	if len(v) != 8 {
		return 0, false, db.corruptf("changelog offset of store %q partition %d is %x", store, partition, v)
	}
	return int64(binary.BigEndian.Uint64(v)), true, nil
}

// PutMeta buffers a small metadata value of an open store partition (e.g. a processor's
// last emit-close time); Commit writes it with the data.
func (db *DB) PutMeta(store string, partition int32, key string, value []byte) error {
	p, err := db.openedPartition(store, partition)
	if err != nil {
		return err
	}
	if value == nil {
		return p.errorf("metadata %q: nil value", key)
	}
	if p.meta == nil {
		p.meta = map[string][]byte{}
	}
	p.meta[key] = bytes.Clone(value)
	p.markDirty()
	return nil
}

// Meta returns a metadata value of an open store partition, buffered or committed; nil
// when there is none.
func (db *DB) Meta(store string, partition int32, key string) ([]byte, error) {
	p, err := db.openedPartition(store, partition)
	if err != nil {
		return nil, err
	}
	if v, ok := p.meta[key]; ok {
		return v, nil
	}
	v, err := db.ldb.Get(sysPartitionKey(sysUserMeta, p.id, p.num, []byte(key)))
	if errors.Is(err, leveldb.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, p.errorf("metadata %q: %w", key, db.readErr(err))
	}
	return v, nil
}

// Wipe deletes a store partition's data, offset and metadata, and drops its buffered
// writes and changelog records. A store this database never held is a no-op.
func (db *DB) Wipe(store string, partition int32) error {
	id, ok := db.storeID(store)
	if !ok {
		return nil
	}
	var b leveldb.Batch
	prefix := dataPrefix(id, partition)
	ranges := []*util.Range{
		util.BytesPrefix(prefix),
		util.BytesPrefix(sysPartitionKey(sysUserMeta, id, partition, nil)),
	}
	for _, r := range ranges {
		it := db.ldb.NewIterator(r)
		for it.Next() {
			b.Delete(it.Key())
		}
		it.Release()
		if err := it.Error(); err != nil {
			return fmt.Errorf("state: wipe store %q partition %d: %w", store, partition, db.readErr(err))
		}
	}
	b.Delete(sysPartitionKey(sysOffset, id, partition, nil))
	b.Delete(sysPartitionKey(sysPartMeta, id, partition, nil))
	if err := db.writeData(&b, true); err != nil {
		return fmt.Errorf("state: wipe store %q partition %d: %w", store, partition, err)
	}
	db.mu.RLock()
	p := db.parts[partKey{store, partition}]
	db.mu.RUnlock()
	if p != nil {
		wasDirty := p.dirty
		p.resetBuffer()
		p.dirty = wasDirty // stays in db.dirty until the epoch ends
		p.setStreamTime(math.MinInt64)
		p.seq, p.committedSeq = 0, 0
		p.lastSweep = math.MinInt64
	}
	kept := db.changelog[:0]
	for _, r := range db.changelog {
		if r.Store != store || r.Partition != partition {
			kept = append(kept, r)
		}
	}
	clear(db.changelog[len(kept):])
	db.changelog = kept
	return nil
}
