package state

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/filter"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/stoatflow/stoatflow/pipeline"
)

// ErrCorrupt reports a state database that cannot be trusted. The agent wipes the
// directory and restores every store from its changelog.
var ErrCorrupt = errors.New("state: corrupt state database")

// DefaultKeyFilterMaxBytes is the key filter's memory bound unless configured otherwise:
// room for its layers up to 22 million keys (27 MiB); the next layer alone would take 80 MiB.
const DefaultKeyFilterMaxBytes = 64 << 20

// Options tune Open.
type Options struct {
	// Sync makes Commit, Restore and Wipe wait until LevelDB's journal reaches stable
	// storage. Without it a power loss may lose the latest commits, data and offsets
	// together, which the changelog replays.
	Sync bool
	// CacheBytes bounds the read cache of committed values that serves point reads (Get
	// of key-value, timestamped key-value and window stores) of keys not written in the
	// current epoch; 0 disables it. DefaultCacheBytes is a good start.
	CacheBytes int64
	// KeyFilterMaxBytes bounds the memory of the key filter (about 1.7 MiB per million
	// keys, see docs/state.md); 0 is DefaultKeyFilterMaxBytes. A filter that would grow past
	// it is turned off for the rest of the run, with a warning in Logger.
	KeyFilterMaxBytes int64
	// Logger receives the database's warnings; nil discards them.
	Logger *slog.Logger
	// WrapStorage, when set, wraps the files the database is kept in. It is for
	// fault-injection tests (faultdisk.Disk.Wrap fills the disk); leave it nil.
	WrapStorage func(storage.Storage) storage.Storage
	// CheckChange, when set, is asked before every write of a logged store whether its
	// changelog record (key, value and headers of these sizes) could ever be sent; an error
	// refuses the write before it reaches the store, so the record that made it fails
	// instead of the commit that would send it (after every restart, the same way).
	CheckChange func(keyLen, valueLen int, headers pipeline.Headers) error
}

// DB is one application's state: every store partition in one goleveldb database.
type DB struct {
	ldb *ldbGuard
	// stor is closed after ldb: leveldb.Open, unlike OpenFile, leaves it open.
	stor storage.Storage
	dir  string
	wo   *opt.WriteOptions
	// cache is nil when disabled.
	cache *valueCache
	keys  *keyFilter

	mu       sync.RWMutex // guards catalog, nextID, parts, runSpecs, writers and released
	catalog  map[string]catalogEntry
	nextID   uint32
	parts    map[partKey]*partition
	runSpecs map[string]catalogSpec // the spec each store was opened with in this run
	// writers write the open epoch (writer.go); main is the DB's own. released are
	// writers released during the epoch that still hold some of its writes.
	writers  []*Writer
	released []*Writer
	main     *Writer

	uncommitted atomic.Int64
	// checkChange is Options.CheckChange; nil accepts every write.
	checkChange func(keyLen, valueLen int, headers pipeline.Headers) error
	// expiryBytes is what the expiry indexes of all store partitions hold together
	// (retention.go), bounded by expiryIndexMaxBytes.
	expiryBytes atomic.Int64

	// Owned by the goroutine that commits.
	batch leveldb.Batch
	// pending is the commit CommitInBackground is writing, until settled.
	pending *BackgroundCommit
}

type catalogEntry struct {
	ID   uint32      `json:"id"`
	Spec catalogSpec `json:"spec"`
}

type partKey struct {
	store     string
	partition int32
}

// Open opens (or creates) the state database in dir. A database that LevelDB finds
// corrupt (or panics on), or whose catalogue cannot be read, gives an error wrapping
// ErrCorrupt.
func Open(dir string, opts Options) (*DB, error) {
	if opts.CacheBytes < 0 {
		return nil, fmt.Errorf("state: open %s: cache size %d bytes is negative", dir, opts.CacheBytes)
	}
	if opts.KeyFilterMaxBytes < 0 {
		return nil, fmt.Errorf("state: open %s: key filter bound %d bytes is negative", dir, opts.KeyFilterMaxBytes)
	}
	filterLimit := opts.KeyFilterMaxBytes
	if filterLimit == 0 {
		filterLimit = DefaultKeyFilterMaxBytes
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("state: create %s: %w", dir, err)
	}
	stor, err := storage.OpenFile(dir, false)
	if err != nil {
		return nil, fmt.Errorf("state: open %s: %w", dir, err)
	}
	if opts.WrapStorage != nil {
		stor = opts.WrapStorage(stor)
	}
	ldb := &ldbGuard{dir: dir}
	err = ldb.open(stor, levelDBOptions())
	if err != nil {
		if ldb.db != nil {
			ldb.db.Close()
		}
		stor.Close()
		if errors.Is(err, ErrCorrupt) {
			return nil, err
		}
		return nil, fmt.Errorf("state: open %s: %w", dir, err)
	}
	db := &DB{
		ldb:     ldb,
		stor:    stor,
		dir:     dir,
		wo:      &opt.WriteOptions{Sync: opts.Sync},
		catalog: map[string]catalogEntry{},
		parts:   map[partKey]*partition{},

		runSpecs: map[string]catalogSpec{},

		checkChange: opts.CheckChange,
	}
	db.main = db.NewWriter()
	if opts.CacheBytes > 0 {
		db.cache = newValueCache(opts.CacheBytes)
	}
	if err := db.load(); err != nil {
		db.Close()
		return nil, err
	}
	if db.keys, err = newKeyFilter(ldb, dir, filterLimit, opts.Logger); err != nil {
		db.Close()
		return nil, fmt.Errorf("state: open %s: %w", dir, err)
	}
	return db, nil
}

// levelDBOptions are the options every state database opens LevelDB with.
func levelDBOptions() *opt.Options {
	return &opt.Options{
		// A damaged manifest or journal must stop the open rather than silently drop
		// commits: offsets and data would then disagree with the changelog.
		Strict: opt.DefaultStrict | opt.StrictManifest | opt.StrictJournal,
		// Aggregations read keys that are not there yet (every new window, every new
		// word): the filter answers most such reads without reading a table block.
		Filter: filter.NewBloomFilter(10),
		// Point reads of keys committed in earlier epochs mostly miss the block cache (with
		// a million keys most data blocks are cold) and read a block from its table: snappy
		// decoding it cost more than the read itself, and encoding every block again at each
		// compaction more still, for little gain: keys share their prefixes in the block
		// already, and counts and timestamps are short. Tables written before stay readable
		// (each block names its compression).
		Compression: opt.NoCompression,
		// A point read of a key that is not in the newest table consults older ones, and
		// goleveldb charges such reads to the first table until it compacts it into the
		// next level: with keys spread over a million words every read of a committed key
		// is one, so each table flushed from the memtable was compacted alone, rewriting
		// the whole of level 1 (3.7 times the bytes written, 2.8 s instead of 1.6 s of
		// compaction per million records). Compactions by size alone suffice: reads probe
		// the newer tables' Bloom filters, not their blocks.
		DisableSeeksCompaction: true,
	}
}

// load checks the format marker and reads the catalogue.
func (db *DB) load() error {
	v, err := db.ldb.Get([]byte{tagSys, sysFormat})
	switch {
	case errors.Is(err, leveldb.ErrNotFound):
		empty, err := db.isEmpty()
		if err != nil {
			return db.readErr(err)
		}
		if !empty {
			return db.corruptf("it holds data but no StoatFlow format marker")
		}
		var b leveldb.Batch
		b.Put([]byte{tagSys, sysFormat}, []byte{formatVersion})
		return db.ldb.Write(&b, db.wo)
	case err != nil:
		return db.readErr(err)
	case len(v) != 1:
		return db.corruptf("format marker %x", v)
	case v[0] != formatVersion:
		return fmt.Errorf("state: %s has state format %d, this StoatFlow reads format %d; reset the application state", db.dir, v[0], formatVersion)
	}
	if v, err := db.ldb.Get([]byte{tagSys, sysNextID}); err == nil {
		if len(v) != 4 {
			return db.corruptf("next store id %x", v)
		}
		db.nextID = binary.BigEndian.Uint32(v)
	} else if !errors.Is(err, leveldb.ErrNotFound) {
		return db.readErr(err)
	}
	it := db.ldb.NewIterator(util.BytesPrefix([]byte{tagSys, sysCatalog}))
	defer it.Release()
	for it.Next() {
		name := string(it.Key()[2:])
		var e catalogEntry
		if err := json.Unmarshal(it.Value(), &e); err != nil {
			return db.corruptf("catalogue entry of store %q: %v", name, err)
		}
		if !e.Spec.valid() || e.Spec.Name != name || e.ID == 0 || e.ID > db.nextID {
			return db.corruptf("catalogue entry of store %q is inconsistent", name)
		}
		db.catalog[name] = e
	}
	if err := it.Error(); err != nil {
		return db.readErr(err)
	}
	return nil
}

func (db *DB) isEmpty() (bool, error) {
	it := db.ldb.NewIterator(nil)
	defer it.Release()
	found := it.First()
	return !found, it.Error()
}

func (db *DB) readErr(err error) error {
	if errors.Is(err, ErrCorrupt) {
		return err
	}
	return fmt.Errorf("state: read %s: %w", db.dir, err)
}

// Close closes the database once a commit writing in the background is done; buffered
// writes that were not committed are lost. It saves the key filter for the next Open.
func (db *DB) Close() error {
	if db.pending != nil {
		_ = db.pending.Wait() // a failed one leaves the database at the commit before it
	}
	if db.ldb.failed() == nil {
		// A filter that cannot be saved (a full disk) costs the next run LevelDB reads of
		// absent keys, never data: the close goes on.
		_ = saveKeyFilter(db.ldb, db.dir, db.keys)
	}
	err := db.ldb.db.Close()
	if serr := db.stor.Close(); err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("state: close %s: %w", db.dir, err)
	}
	return nil
}

// UncommittedBytes is the number of bytes written into every store's epoch buffer since
// the last Commit or Abort, overwrites included (the buffer keeps them until then).
func (db *DB) UncommittedBytes() int64 { return db.uncommitted.Load() }

// UncommittedBytesByStore sums UncommittedBytes per store name over its partitions.
func (db *DB) UncommittedBytesByStore() map[string]int64 {
	db.mu.RLock()
	defer db.mu.RUnlock()
	out := make(map[string]int64, len(db.catalog))
	for k, p := range db.parts {
		out[k.store] += p.uncommitted.Load()
	}
	return out
}

// CachedBytes is the memory the read cache holds, entry overheads included; at most
// Options.CacheBytes.
func (db *DB) CachedBytes() int64 {
	if db.cache == nil {
		return 0
	}
	return db.cache.size()
}

// open returns the partition of a store, registering the store in the catalogue on first
// use. Within one run a store keeps one spec; across runs the type and formats must match.
func (db *DB) open(spec catalogSpec, partition int32) (*partition, error) {
	if partition < 0 {
		return nil, fmt.Errorf("state: store %q: partition %d is negative", spec.Name, partition)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if s, ok := db.runSpecs[spec.Name]; ok && s != spec {
		return nil, fmt.Errorf("state: store %q is already open with spec %+v, not %+v", spec.Name, s, spec)
	}
	k := partKey{spec.Name, partition}
	if p, ok := db.parts[k]; ok {
		return p, nil
	}
	e, known := db.catalog[spec.Name]
	if known {
		if err := spec.compatible(e.Spec); err != nil {
			return nil, err
		}
	} else {
		db.nextID++
		e.ID = db.nextID
	}
	if !known || e.Spec != spec {
		if err := db.writeCatalog(catalogEntry{ID: e.ID, Spec: spec}); err != nil {
			return nil, err
		}
		e.Spec = spec
		db.catalog[spec.Name] = e
	}
	p, err := newPartition(db, spec, e.ID, partition)
	if err != nil {
		return nil, err
	}
	db.parts[k] = p
	db.runSpecs[spec.Name] = spec
	if db.cache != nil {
		db.cache.register(e.ID, spec)
	}
	return p, nil
}

func (db *DB) writeCatalog(e catalogEntry) error {
	v, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("state: store %q: encode catalogue entry: %w", e.Spec.Name, err)
	}
	var b leveldb.Batch
	b.Put(catalogKey(e.Spec.Name), v)
	b.Put([]byte{tagSys, sysNextID}, binary.BigEndian.AppendUint32(nil, db.nextID))
	if err := db.ldb.Write(&b, db.wo); err != nil {
		return fmt.Errorf("state: store %q: write catalogue: %w", e.Spec.Name, err)
	}
	return nil
}

// storeID returns a catalogued store's id.
func (db *DB) storeID(store string) (uint32, bool) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	e, ok := db.catalog[store]
	return e.ID, ok
}

func (db *DB) openedPartition(store string, partition int32) (*partition, error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	p, ok := db.parts[partKey{store, partition}]
	if !ok {
		return nil, fmt.Errorf("state: store %q partition %d is not open", store, partition)
	}
	return p, nil
}

func (db *DB) typed(spec pipeline.StoreSpec, partition int32, want storeKind) (*partition, error) {
	s, err := catalogSpecOf(spec)
	if err != nil {
		return nil, err
	}
	if s.Type != want {
		return nil, fmt.Errorf("state: store %q is a %s store, not %s", s.Name, s.Type, want)
	}
	return db.open(s, partition)
}

// KeyValueStore opens a partition of a plain key-value store, writing into the main writer.
func (db *DB) KeyValueStore(spec pipeline.StoreSpec, partition int32) (*KeyValueStore, error) {
	return db.main.KeyValueStore(spec, partition)
}

// TimestampedKeyValueStore opens a partition of a timestamped (optionally headers-aware)
// key-value store, writing into the main writer.
func (db *DB) TimestampedKeyValueStore(spec pipeline.StoreSpec, partition int32) (*TimestampedKeyValueStore, error) {
	return db.main.TimestampedKeyValueStore(spec, partition)
}

// WindowStore opens a partition of a timestamped window store, writing into the main writer.
func (db *DB) WindowStore(spec pipeline.StoreSpec, partition int32) (*WindowStore, error) {
	return db.main.WindowStore(spec, partition)
}

// SessionStore opens a partition of a session store, writing into the main writer.
func (db *DB) SessionStore(spec pipeline.StoreSpec, partition int32) (*SessionStore, error) {
	return db.main.SessionStore(spec, partition)
}

// VersionedStore opens a partition of a versioned key-value store, writing into the main
// writer.
func (db *DB) VersionedStore(spec pipeline.StoreSpec, partition int32) (*VersionedStore, error) {
	return db.main.VersionedStore(spec, partition)
}

// KeyValueStore opens a partition of a plain key-value store, writing into w.
func (w *Writer) KeyValueStore(spec pipeline.StoreSpec, partition int32) (*KeyValueStore, error) {
	p, err := w.db.typed(spec, partition, keyValueKind)
	if err != nil {
		return nil, err
	}
	return &KeyValueStore{KeyValueView{kvReader{p: p, level: ReadUncommitted}}, w}, nil
}

// TimestampedKeyValueStore opens a partition of a timestamped (optionally headers-aware)
// key-value store, writing into w.
func (w *Writer) TimestampedKeyValueStore(spec pipeline.StoreSpec, partition int32) (*TimestampedKeyValueStore, error) {
	p, err := w.db.typed(spec, partition, timestampedKeyValueKind)
	if err != nil {
		return nil, err
	}
	return &TimestampedKeyValueStore{TimestampedKeyValueView{kvReader{p: p, level: ReadUncommitted}}, w}, nil
}

// WindowStore opens a partition of a timestamped window store, writing into w.
func (w *Writer) WindowStore(spec pipeline.StoreSpec, partition int32) (*WindowStore, error) {
	p, err := w.db.typed(spec, partition, windowKind)
	if err != nil {
		return nil, err
	}
	return &WindowStore{WindowView{p: p, level: ReadUncommitted}, w}, nil
}

// SessionStore opens a partition of a session store, writing into w.
func (w *Writer) SessionStore(spec pipeline.StoreSpec, partition int32) (*SessionStore, error) {
	p, err := w.db.typed(spec, partition, sessionKind)
	if err != nil {
		return nil, err
	}
	return &SessionStore{SessionView{p: p, level: ReadUncommitted}, w}, nil
}

// VersionedStore opens a partition of a versioned key-value store, writing into w.
func (w *Writer) VersionedStore(spec pipeline.StoreSpec, partition int32) (*VersionedStore, error) {
	p, err := w.db.typed(spec, partition, versionedKind)
	if err != nil {
		return nil, err
	}
	return &VersionedStore{VersionedView{p: p, level: ReadUncommitted}, w}, nil
}
