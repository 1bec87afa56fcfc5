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
// error nothing is applied and the buffers stay, so the caller can retry or Abort. A commit
// still writing in the background (CommitInBackground) is waited for first; if it failed,
// Commit fails with its error.
func (db *DB) Commit(changelogOffsets map[ChangelogPartition]int64) error {
	if err := db.settle(); err != nil {
		return err
	}
	b, parts, err := db.buildBatch()
	if err == nil {
		err = db.appendOffsets(b, changelogOffsets)
	}
	if err != nil {
		return err
	}
	if b.Len() > 0 {
		if err := db.writeData(b, false); err != nil {
			return fmt.Errorf("state: commit: %w", err)
		}
	}
	for i := range parts {
		parts[i].committed()
		parts[i].p.resetBuffer()
	}
	db.endEpoch()
	return nil
}

// BackgroundCommit is an epoch CommitInBackground is writing to LevelDB.
type BackgroundCommit struct {
	done  chan struct{}
	err   error // set before done is closed
	parts []sealedPart
}

// Wait waits for the write and returns its error. Any goroutine may call it.
func (c *BackgroundCommit) Wait() error {
	<-c.done
	return c.err
}

// sealedPart is what a commit applies of one store partition, beyond its batch entries.
type sealedPart struct {
	p          *partition
	streamTime int64
	seq        int32
	swept      bool
	sweptTo    int64 // the expiry cutoff the sweep deleted up to
}

// committed records the partition's commit, once its batch is written: reads at
// READ_COMMITTED go by the new stream time from now on. The processing goroutine calls it.
func (s *sealedPart) committed() {
	s.p.committedStreamTime.Store(s.streamTime)
	s.p.committedSeq = s.seq
	if s.swept {
		s.p.lastSweep = s.sweptTo
	}
}

// CommitInBackground commits as Commit does, but writes the batch on a goroutine of its own
// and returns once the batch of the epoch's writes is built: the next epoch starts at once.
// That goroutine first calls changelogOffsets for the offsets to commit with the writes (it
// may wait there for the changelog's acknowledgements); an error from it applies nothing
// and is the commit's. Until the write is done, READ_UNCOMMITTED reads see the sealed
// epoch's writes under the next epoch's (buffer, then sealed buffer, then LevelDB) and
// READ_COMMITTED reads the state before it, as before any commit; the write makes the
// data, offsets and stream times visible together. The next Commit, CommitInBackground,
// Abort, Restore, Wipe or Close waits for the write first, so at most one is in flight. If
// it fails, nothing of the epoch is applied: the sealed writes stay readable, every later
// commit fails with the error, and Abort drops them. The caller must have taken the epoch's
// changelog records.
func (db *DB) CommitInBackground(changelogOffsets func() (map[ChangelogPartition]int64, error)) (*BackgroundCommit, error) {
	if err := db.settle(); err != nil {
		return nil, err
	}
	b, parts, err := db.buildBatch()
	if err != nil {
		return nil, err
	}
	c := &BackgroundCommit{done: make(chan struct{}), parts: parts}
	for i := range parts {
		p := parts[i].p
		p.sealed.Store(p.buf.Load())
		p.sealedMeta = p.meta
		p.resetBuffer()
	}
	db.endEpoch()
	db.pending = c
	go func() {
		defer close(c.done)
		offsets, err := changelogOffsets()
		if err == nil {
			err = db.appendOffsets(b, offsets)
		}
		if err == nil && b.Len() > 0 {
			if err = db.writeData(b, false); err != nil {
				err = fmt.Errorf("state: commit in the background: %w", err)
			}
		}
		if c.err = err; err != nil {
			return
		}
		for i := range parts {
			p := parts[i].p
			p.committedStreamTime.Store(parts[i].streamTime)
			p.sealed.Store(nil)
		}
	}()
	return c, nil
}

// settle waits for the commit writing in the background, if any, and finishes it on the
// processing goroutine; it returns the write's error, and keeps returning it until Abort.
func (db *DB) settle() error {
	c := db.pending
	if c == nil {
		return nil
	}
	if err := c.Wait(); err != nil {
		return err
	}
	for i := range c.parts {
		c.parts[i].committed()
		c.parts[i].p.sealedMeta = nil
	}
	db.pending = nil
	return nil
}

// buildBatch builds the commit batch of the dirty store partitions in db.batch.
func (db *DB) buildBatch() (*leveldb.Batch, []sealedPart, error) {
	b := &db.batch
	b.Reset()
	var dirty []*partition
	for _, w := range db.epochWriters() {
		dirty = append(dirty, w.dirty...)
	}
	parts := make([]sealedPart, len(dirty))
	for i, p := range dirty {
		if err := p.appendBuffer(b); err != nil {
			return nil, nil, err
		}
		did, err := p.appendSweep(b)
		if err != nil {
			return nil, nil, err
		}
		p.appendMeta(b)
		st := p.streamTime.Load()
		parts[i] = sealedPart{p: p, streamTime: st, seq: p.seq, swept: did, sweptTo: p.expiryCutoff(st)}
	}
	return b, parts, nil
}

// appendOffsets adds the changelog offsets to a commit batch.
func (db *DB) appendOffsets(b *leveldb.Batch, changelogOffsets map[ChangelogPartition]int64) error {
	for cp, off := range changelogOffsets {
		id, ok := db.storeID(cp.Store)
		if !ok {
			return fmt.Errorf("state: commit: changelog offset for unknown store %q", cp.Store)
		}
		b.Put(sysPartitionKey(sysOffset, id, cp.Partition, nil), binary.BigEndian.AppendUint64(nil, uint64(off)))
	}
	return nil
}

// Abort drops every buffered write, metadata change and changelog record of the epoch. A
// commit writing in the background is waited for; if it failed, its writes are dropped too
// and the stores are back at the last commit that was written.
func (db *DB) Abort() {
	if c := db.pending; c != nil && db.settle() != nil {
		for i := range c.parts {
			p := c.parts[i].p
			p.sealed.Store(nil)
			p.sealedMeta = nil
			p.streamTime.Store(p.committedStreamTime.Load())
			p.seq = p.committedSeq
		}
		db.pending = nil
	}
	for _, w := range db.epochWriters() {
		for _, p := range w.dirty {
			p.streamTime.Store(p.committedStreamTime.Load())
			p.seq = p.committedSeq
			p.resetBuffer()
		}
	}
	db.endEpoch()
}

// endEpoch forgets every writer's share of the epoch, and the writers released during it.
func (db *DB) endEpoch() {
	for _, w := range db.epochWriters() {
		w.endEpoch()
	}
	db.mu.Lock()
	clear(db.released)
	db.released = db.released[:0]
	db.mu.Unlock()
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
// last emit-close time) in the main writer; Commit writes it with the data.
func (db *DB) PutMeta(store string, partition int32, key string, value []byte) error {
	return db.putMeta(db.main, store, partition, key, value)
}

func (db *DB) putMeta(w *Writer, store string, partition int32, key string, value []byte) error {
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
	p.markDirty(w)
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
	if v, ok := p.sealedMeta[key]; ok {
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
	if err := db.settle(); err != nil {
		return err
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
		p.dirty = wasDirty // stays in its writer's dirty list until the epoch ends
		p.setStreamTime(math.MinInt64)
		p.seq, p.committedSeq = 0, 0
		p.lastSweep = math.MinInt64
	}
	for _, w := range db.epochWriters() {
		kept, taken := w.changelog[:0], 0
		for i, r := range w.changelog {
			if r.Store != store || r.Partition != partition {
				kept = append(kept, r)
				if i < w.changelogTaken {
					taken++
				}
			}
		}
		clear(w.changelog[len(kept):])
		w.changelog, w.changelogTaken = kept, taken
	}
	return nil
}
