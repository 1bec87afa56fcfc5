package state

import (
	"testing"

	"github.com/syndtr/goleveldb/leveldb/util"

	"github.com/stoatflow/stoatflow/pipeline"
)

// benchWindowKeys is the number of keys of the window benchmarks; each has windows
// starting at 0, 50, ..., 450 committed, and every tenth key an uncommitted update of its
// last window and a new one at 500.
const benchWindowKeys = 1000

// BenchmarkWindowPointRead reads one window at a time as a hopping-window aggregation does
// before each put: a mix of buffered, committed and absent windows. "fetch" is a one-window
// range scan, "get" the point read the agent does.
func BenchmarkWindowPointRead(b *testing.B) {
	cacheCases(b, func(b *testing.B, db *DB) {
		s, err := db.WindowStore(pipeline.StoreSpec{Name: "counts", Type: pipeline.TimestampedWindowStoreType, WindowSize: 100, Retention: 1000, Logged: true}, 0)
		noErr(b, err)
		value := make([]byte, 8)
		for i := range benchWindowKeys {
			for start := int64(0); start < 500; start += 50 {
				_, err := s.Put(benchKey(i), start, value, start)
				noErr(b, err)
			}
		}
		commit(b, db)
		// Committed windows live in tables, as they do once a store outgrows its memtable.
		noErr(b, db.ldb.db.CompactRange(util.Range{}))
		for i := 0; i < benchWindowKeys; i += 10 {
			for _, start := range []int64{450, 500} {
				_, err := s.Put(benchKey(i), start, value[:4], start)
				noErr(b, err)
			}
		}
		at := func(i int) ([]byte, int64) {
			return benchKey(i % benchWindowKeys), int64(i/benchWindowKeys%11) * 50
		}
		b.Run("fetch", func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				k, start := at(i)
				it := s.Fetch(k, start, start, false)
				if it.Next() {
					_ = it.Value()
				}
				noErr(b, it.Err())
				it.Close()
			}
		})
		b.Run("get", func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				k, start := at(i)
				_, _, _, err := s.GetWithHeaders(k, start)
				noErr(b, err)
			}
		})
		// A window not there yet, as for each new window of a hopping aggregation: the
		// tables' bloom filters answer it.
		b.Run("absent", func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				_, _, _, err := s.GetWithHeaders(benchKey(i%benchWindowKeys), 475)
				noErr(b, err)
			}
		})
	})
}
