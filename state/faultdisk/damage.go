package faultdisk

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/syndtr/goleveldb/leveldb"
	"github.com/syndtr/goleveldb/leveldb/opt"
	"github.com/syndtr/goleveldb/leveldb/util"
)

// SplitTables compacts the closed LevelDB database in dir into level-1 tables of about
// 2 KiB in 1 KiB blocks: each table then holds a key range of its own, and goleveldb opens a table only when a
// read reaches its keys, so a test can damage the tables a running database has not read
// yet. It returns the table files in key order (the first holds the smallest keys).
func SplitTables(dir string) ([]string, error) {
	db, err := leveldb.OpenFile(dir, &opt.Options{BlockSize: 1 << 10, CompactionTableSize: 2 << 10})
	if err != nil {
		return nil, fmt.Errorf("split tables of %s: %w", dir, err)
	}
	err = db.CompactRange(util.Range{})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("split tables of %s: %w", dir, err)
	}
	// goleveldb deletes a table the compaction replaced only once no reader holds it, and
	// Close drops the readers without: the next open deletes it, so that only the tables
	// the database uses are left to damage.
	if db, err = leveldb.OpenFile(dir, nil); err == nil {
		err = db.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("split tables of %s: %w", dir, err)
	}
	return Files(dir, "*.ldb")
}

// Files lists the database's files matching pattern in dir ("*.ldb", "*.log",
// "MANIFEST-*"), by file number: tables a compaction wrote are in key order. It reads only
// the directory, so it works under a running database too.
func Files(dir, pattern string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		return nil, err
	}
	// goleveldb pads file numbers to six digits.
	slices.SortFunc(files, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b))
	})
	if len(files) == 0 {
		return nil, fmt.Errorf("no %s in %s", pattern, dir)
	}
	return files, nil
}

// Garble flips every bit of n bytes of file from off (from the end when off is
// negative), in place, as a damaged disk would return them; the file stays as long.
func Garble(file string, off, n int64) error {
	return rewrite(file, off, n, func(b []byte) {
		for i := range b {
			b[i] ^= 0xff
		}
	})
}

// GarbleBlock damages the first data block of a table: its checksum no longer matches,
// which goleveldb reports as corruption when a read reaches the block.
func GarbleBlock(table string) error { return Garble(table, 16, 64) }

// GarbleFooter damages a table's footer (its last 48 bytes) but keeps its magic number (the
// last 8), so that goleveldb decodes the block handles: their varints then overflow, and
// goleveldb (v1.0.0, and the 2022 commit go.mod names) slices with a negative index (a
// panic in table.decodeBlockHandle) unless something checks first.
func GarbleFooter(table string) error {
	return rewrite(table, -48, 40, func(b []byte) {
		for i := range b {
			b[i] = 0xff
		}
	})
}

// rewrite changes n bytes of file from off (from the end when negative) in place.
func rewrite(file string, off, n int64, change func([]byte)) error {
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if off < 0 {
		off += st.Size()
	}
	if off < 0 || n <= 0 || off+n > st.Size() {
		return fmt.Errorf("damage %s: [%d, +%d) is outside its %d bytes", file, off, n, st.Size())
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		return err
	}
	change(b)
	if _, err := f.WriteAt(b, off); err != nil {
		return err
	}
	return f.Sync()
}
