package state

import (
	"slices"

	"github.com/stoatflow/stoatflow/pipeline"
)

// A Writer is one processing goroutine's share of the open epoch: the store partitions it
// wrote and their changelog records, in write order. Stores opened through a Writer write
// into it; the DB's own handles (KeyValueStore, PutMeta, StoreProvider, ...) write into
// the DB's main writer.
//
// Several goroutines may write at once, each through its own Writer and each to store
// partitions no other goroutine writes in the same epoch (a task's partitions belong to one
// worker at a time). A Writer's changelog keeps each partition's records in write order,
// which is the order the caller must send them in. Commit, Abort, Restore and Wipe cover
// every Writer and run while none of them writes.
type Writer struct {
	db    *DB
	dirty []*partition
	// changelog is the epoch's changelog records; changelogTaken how many of them
	// TakeChangelog has returned; changelogData holds their keys and values (bytes).
	changelog      []ChangelogRecord
	changelogTaken int
	changelogData  []byte
}

// NewWriter adds a Writer for one more processing goroutine.
func (db *DB) NewWriter() *Writer {
	w := &Writer{db: db}
	db.mu.Lock()
	db.writers = append(db.writers, w)
	db.mu.Unlock()
	return w
}

// Release takes w out of the epoch: its goroutine is gone. Its writes belong to the epoch
// still, until the next Commit or Abort; stores opened through w must not be written again.
func (w *Writer) Release() {
	db := w.db
	db.mu.Lock()
	defer db.mu.Unlock()
	if len(w.dirty) > 0 || len(w.changelog) > 0 {
		db.released = append(db.released, w)
	}
	db.writers = slices.DeleteFunc(db.writers, func(x *Writer) bool { return x == w })
}

// epochWriters are the writers whose writes the open epoch holds: the live ones and those
// released during it. Only the goroutine that commits calls it.
func (db *DB) epochWriters() []*Writer {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return append(slices.Clone(db.writers), db.released...)
}

// StoreProvider returns the stores as the engine opens them (pipeline.StoreProvider),
// writing into w.
func (w *Writer) StoreProvider() pipeline.StoreProvider { return provider{w} }

// TakeChangelog returns the changelog records w wrote since its last TakeChangelog, in
// write order, so that a caller can send them while the epoch goes on. The slice is valid
// until the next Commit or Abort.
func (w *Writer) TakeChangelog() []ChangelogRecord {
	recs := w.changelog[w.changelogTaken:]
	w.changelogTaken = len(w.changelog)
	return recs
}

// PutMeta is DB.PutMeta written into w.
func (w *Writer) PutMeta(store string, partition int32, key string, value []byte) error {
	return w.db.putMeta(w, store, partition, key, value)
}

// endEpoch forgets the epoch's partitions and changelog records.
func (w *Writer) endEpoch() {
	clear(w.dirty)
	w.dirty = w.dirty[:0]
	clear(w.changelog)
	w.changelog = w.changelog[:0]
	w.changelogTaken = 0
}
