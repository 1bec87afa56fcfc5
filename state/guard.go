package state

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/syndtr/goleveldb/leveldb"
	lerrors "github.com/syndtr/goleveldb/leveldb/errors"
	"github.com/syndtr/goleveldb/leveldb/iterator"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/storage"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// ldbGuard is the boundary with goleveldb: every call that can read or write one of its
// files goes through it. goleveldb reports most damage as errors (errors.IsCorrupted);
// ldbGuard wraps them in ErrCorrupt. It turns a goleveldb panic into such an error too, so
// that none escapes this package (a damaged table footer panics in decodeBlockHandle;
// checkedStorage stops that one before goleveldb sees it). The first corruption is kept
// (DB.Corruption) and every later call fails with it without touching goleveldb: a
// database found damaged is not read or written again, only closed and rebuilt.
type ldbGuard struct {
	db      *leveldb.DB
	dir     string
	corrupt atomic.Pointer[corruption]
}

type corruption struct{ err error }

func (g *ldbGuard) open(stor storage.Storage, o *opt.Options) (err error) {
	defer g.recover(&err)
	g.db, err = leveldb.Open(checkedStorage{stor}, o)
	return g.check(err)
}

// fail records a corruption and returns it as an error wrapping ErrCorrupt.
func (g *ldbGuard) fail(err error) error {
	c := &corruption{fmt.Errorf("%w: %s: %v", ErrCorrupt, g.dir, err)}
	g.corrupt.CompareAndSwap(nil, c)
	return c.err
}

// check maps an error of goleveldb: corruption becomes ErrCorrupt, the rest stays as is
// (leveldb.ErrNotFound included).
func (g *ldbGuard) check(err error) error {
	if lerrors.IsCorrupted(err) {
		return g.fail(err)
	}
	return err
}

// failed is the corruption found earlier, if any.
func (g *ldbGuard) failed() error {
	if c := g.corrupt.Load(); c != nil {
		return c.err
	}
	return nil
}

// recover, deferred by every call into goleveldb, turns a panic inside goleveldb into a
// corruption. A panic of this package's own code is not goleveldb's: it goes on.
func (g *ldbGuard) recover(errp *error) {
	r := recover()
	if r == nil {
		return
	}
	if !panickedInGoleveldb() {
		panic(r)
	}
	*errp = g.fail(fmt.Errorf("goleveldb panicked: %v", r))
}

// panickedInGoleveldb reports whether the panic being recovered started in goleveldb: the
// deferred call runs on top of the panicking frames, so they are on the stack.
func panickedInGoleveldb() bool {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "github.com/syndtr/goleveldb/") {
			return true
		}
		if !more {
			return false
		}
	}
}

func (g *ldbGuard) Get(key []byte) (v []byte, err error) {
	if err := g.failed(); err != nil {
		return nil, err
	}
	defer g.recover(&err)
	v, err = g.db.Get(key, nil)
	if err == nil && v == nil {
		// goleveldb returns a present empty value as nil when it comes from the memtable;
		// a stored value is never nil here (nil is "absent").
		v = []byte{}
	}
	return v, g.check(err)
}

func (g *ldbGuard) Write(b *leveldb.Batch, wo *opt.WriteOptions) (err error) {
	if err := g.failed(); err != nil {
		return err
	}
	defer g.recover(&err)
	return g.check(g.db.Write(b, wo))
}

// NewIterator iterates r; opening it reads every level-0 table, so it may fail too: the
// iterator is then empty and its Error says why.
func (g *ldbGuard) NewIterator(r *util.Range) iterator.Iterator {
	it, err := g.newIterator(r)
	if err != nil {
		return iterator.NewEmptyIterator(err)
	}
	return &guardedIter{Iterator: it, g: g}
}

func (g *ldbGuard) newIterator(r *util.Range) (it iterator.Iterator, err error) {
	if err := g.failed(); err != nil {
		return nil, err
	}
	defer g.recover(&err)
	return g.db.NewIterator(r, nil), nil
}

// guardedIter is a goleveldb iterator whose moves are guarded: they read table blocks.
type guardedIter struct {
	iterator.Iterator
	g   *ldbGuard
	err error
}

// stop reports whether the iterator must not move: it failed, or the database did.
func (i *guardedIter) stop() bool {
	if i.err == nil {
		i.err = i.g.failed()
	}
	return i.err != nil
}

func (i *guardedIter) First() (ok bool) {
	if i.stop() {
		return false
	}
	defer i.g.recover(&i.err)
	return i.Iterator.First()
}

func (i *guardedIter) Last() (ok bool) {
	if i.stop() {
		return false
	}
	defer i.g.recover(&i.err)
	return i.Iterator.Last()
}

func (i *guardedIter) Seek(key []byte) (ok bool) {
	if i.stop() {
		return false
	}
	defer i.g.recover(&i.err)
	return i.Iterator.Seek(key)
}

func (i *guardedIter) Next() (ok bool) {
	if i.stop() {
		return false
	}
	defer i.g.recover(&i.err)
	return i.Iterator.Next()
}

func (i *guardedIter) Prev() (ok bool) {
	if i.stop() {
		return false
	}
	defer i.g.recover(&i.err)
	return i.Iterator.Prev()
}

func (i *guardedIter) Error() error {
	if i.err != nil {
		return i.err
	}
	return i.g.check(i.Iterator.Error())
}

// checkedStorage checks every table footer goleveldb reads before goleveldb decodes it.
// Blocks carry checksums and goleveldb reports a damaged one as corruption, but the footer
// has none: goleveldb decodes its block handles without bounds checks (a varint that
// overflows makes it slice with a negative index) and allocates the block lengths they
// give. It does so when it first opens a table, on whatever goroutine needs it, its own
// compactions included, where no recover could reach: so the footer is checked here, and a
// bad one is a corruption error from the read.
type checkedStorage struct{ storage.Storage }

func (s checkedStorage) Open(fd storage.FileDesc) (storage.Reader, error) {
	r, err := s.Storage.Open(fd)
	if err != nil || fd.Type != storage.TypeTable {
		return r, err
	}
	return tableReader{r, fd}, nil
}

type tableReader struct {
	storage.Reader
	fd storage.FileDesc
}

// A table ends with a 48-byte footer: the metaindex and index block handles (offset and
// length, two unsigned varints each), zero padding, and the table magic number.
const tableFooterLen = 48

var tableMagic = []byte("\x57\xfb\x80\x8b\x24\x75\x47\xdb")

func (r tableReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.Reader.ReadAt(p, off)
	if n == tableFooterLen && len(p) == tableFooterLen {
		if ferr := checkTableFooter(p, off); ferr != nil {
			return n, lerrors.NewErrCorrupted(r.fd, ferr)
		}
	}
	return n, err
}

// checkTableFooter checks the block handles of footer f read at pos: each must decode and
// name a block (plus its 5-byte trailer) that ends before the footer. A read that does not
// end with the magic number is a block, or a footer goleveldb rejects by itself.
func checkTableFooter(f []byte, pos int64) error {
	if !bytes.HasSuffix(f, tableMagic) {
		return nil
	}
	rest := f[:len(f)-len(tableMagic)]
	for _, name := range []string{"metaindex", "index"} {
		off, n := binary.Uvarint(rest)
		if n <= 0 {
			return fmt.Errorf("table footer: the %s block handle does not decode", name)
		}
		length, m := binary.Uvarint(rest[n:])
		if m <= 0 {
			return fmt.Errorf("table footer: the %s block handle does not decode", name)
		}
		if end := uint64(pos); off > end || length > end-off || end-off-length < 5 {
			return fmt.Errorf("table footer: the %s block [%d, +%d) does not end before the footer at %d", name, off, length, pos)
		}
		rest = rest[n+m:]
	}
	return nil
}

// corruptf is a corruption this package finds in what goleveldb returned: it is kept like
// goleveldb's own.
func (db *DB) corruptf(format string, args ...any) error {
	return db.ldb.fail(fmt.Errorf(format, args...))
}

// Corruption returns the first corruption any read or write of the database found, on any
// goroutine, or nil. Once there is one, every read and write that needs LevelDB fails with
// it: the agent drops the epoch and rebuilds the database from the changelogs.
func (db *DB) Corruption() error { return db.ldb.failed() }

func (g *ldbGuard) sizeOf(r util.Range) (n int64, err error) {
	if err := g.failed(); err != nil {
		return 0, err
	}
	defer g.recover(&err)
	sizes, err := g.db.SizeOf([]util.Range{r})
	if err != nil {
		return 0, g.check(err)
	}
	return sizes.Sum(), nil
}
