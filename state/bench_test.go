package state

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

func benchKey(i int) []byte {
	return binary.BigEndian.AppendUint64([]byte("word-"), uint64(i%10000))
}

// BenchmarkPutGet is the processing path of a count: read the key, write it back, both
// through the epoch buffer, with changelog capture.
func BenchmarkPutGet(b *testing.B) {
	db, _ := openDB(b)
	s, err := db.TimestampedKeyValueStore(pipeline.StoreSpec{Name: "counts", Type: pipeline.TimestampedKeyValueStoreType, Logged: true}, 0)
	noErr(b, err)
	value := make([]byte, 8)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := benchKey(i)
		if _, _, err := s.Get(k); err != nil {
			b.Fatal(err)
		}
		noErr(b, s.Put(k, value, int64(i)))
		if i%100000 == 99999 {
			b.StopTimer()
			commit(b, db)
			b.StartTimer()
		}
	}
}

// BenchmarkCommit10k commits an epoch of 10,000 dirty keys (16 B keys, 100 B values),
// written in no particular order, as records bring them.
func BenchmarkCommit10k(b *testing.B) {
	db, _ := openDB(b)
	s, err := db.TimestampedKeyValueStore(pipeline.StoreSpec{Name: "counts", Type: pipeline.TimestampedKeyValueStoreType, Logged: true}, 0)
	noErr(b, err)
	value := make([]byte, 100)
	offsets := map[ChangelogPartition]int64{{Store: "counts"}: 0}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		for j := range 10000 {
			noErr(b, s.Put(binary.BigEndian.AppendUint64([]byte("key-1234"), uint64(j*7919%10000)), value, int64(i)))
		}
		offsets[ChangelogPartition{Store: "counts"}] = int64(i)
		b.StartTimer()
		noErr(b, db.Commit(offsets))
	}
}

// BenchmarkIteratorScan scans 10,000 committed entries with a few buffered over them.
func BenchmarkIteratorScan(b *testing.B) {
	db, _ := openDB(b)
	s, err := db.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType}, 0)
	noErr(b, err)
	value := make([]byte, 100)
	for j := range 10000 {
		noErr(b, s.Put(benchKey(j), value, 0))
	}
	commit(b, db)
	for j := 0; j < 10000; j += 100 {
		noErr(b, s.Put(benchKey(j), value[:10], 0))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		it := s.All(false)
		n := 0
		for it.Next() {
			n++
		}
		it.Close()
		if n != 10000 {
			b.Fatalf("%d entries", n)
		}
	}
}

// cacheCases runs a benchmark without and with the read cache, for ratios from one run.
func cacheCases(b *testing.B, run func(b *testing.B, db *DB)) {
	for _, c := range []struct {
		name  string
		bytes int64
	}{{"cache=off", 0}, {"cache=on", DefaultCacheBytes}} {
		b.Run(c.name, func(b *testing.B) {
			db, err := Open(b.TempDir(), Options{CacheBytes: c.bytes})
			noErr(b, err)
			defer db.Close()
			run(b, db)
		})
	}
}

// BenchmarkGetCommitted reads 10,000 keys committed in an earlier epoch, as the processing
// path does for every key not yet written in its epoch.
func BenchmarkGetCommitted(b *testing.B) {
	cacheCases(b, func(b *testing.B, db *DB) {
		s, err := db.TimestampedKeyValueStore(pipeline.StoreSpec{Name: "counts", Type: pipeline.TimestampedKeyValueStoreType, Logged: true}, 0)
		noErr(b, err)
		value := make([]byte, 8)
		for i := range 10000 {
			noErr(b, s.Put(benchKey(i), value, int64(i)))
		}
		commit(b, db)
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if v, _, err := s.Get(benchKey(i)); err != nil || v == nil {
				b.Fatal(v, err)
			}
		}
	})
}

// BenchmarkEpochLoop is a count's processing loop with its commits: Get and Put of 10,000
// hot keys, a commit every 5,000 records.
func BenchmarkEpochLoop(b *testing.B) {
	cacheCases(b, func(b *testing.B, db *DB) {
		countLoop(b, db, 0, func(i int) []byte { return benchKey(i * 7) })
	})
}

// distinctKey spreads i over a space of 2^20 (about a million) keys in no particular order,
// as the words of the 1 M distinct keys word count arrive.
func distinctKey(i int) []byte {
	return binary.BigEndian.AppendUint64([]byte("word-"), uint64(i)*0x9E3779B97F4A7C15>>44)
}

// BenchmarkEpochLoop1MKeys is BenchmarkEpochLoop over a million keys, a quarter of them
// committed before: most reads miss the buffer, the cache and LevelDB, and every write is
// a new key of the epoch.
func BenchmarkEpochLoop1MKeys(b *testing.B) {
	cacheCases(b, func(b *testing.B, db *DB) {
		countLoop(b, db, 1<<18, func(i int) []byte { return distinctKey(i*7 + 1) })
	})
}

// countLoop times Get and Put of key(i) for each record i in a logged timestamped store,
// with a commit every 5,000 records, after committing prefill keys spread like key's.
func countLoop(b *testing.B, db *DB, prefill int, key func(i int) []byte) {
	s, err := db.TimestampedKeyValueStore(pipeline.StoreSpec{Name: "counts", Type: pipeline.TimestampedKeyValueStoreType, Logged: true}, 0)
	noErr(b, err)
	value := make([]byte, 8)
	for i := range prefill {
		noErr(b, s.Put(distinctKey(i<<2), value, int64(i)))
		if i%50000 == 49999 {
			commit(b, db)
		}
	}
	commit(b, db)
	offsets := map[ChangelogPartition]int64{{Store: "counts"}: 0}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := key(i)
		if _, _, err := s.Get(k); err != nil {
			b.Fatal(err)
		}
		noErr(b, s.Put(k, value, int64(i)))
		if i%5000 == 4999 {
			offsets[ChangelogPartition{Store: "counts"}] = int64(i)
			noErr(b, db.Commit(offsets))
		}
	}
}

// BenchmarkKeyFilterAbsent asks the key filter of n keys about keys it never held, as the
// first sight of every new word does.
func BenchmarkKeyFilterAbsent(b *testing.B) {
	for _, n := range []int{10_000, 300_000, 4_000_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			f := &keyFilter{ready: true}
			layers := []*filterLayer{newFilterLayer(filterFirstKeys)}
			f.layers.Store(&layers)
			for i := range n {
				f.add(filterBenchKey(2 * i))
			}
			keys := make([][]byte, 1<<16)
			for i := range keys {
				keys[i] = filterBenchKey(2*i + 1)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				f.mayHold(keys[i&(len(keys)-1)])
			}
		})
	}
}

func filterBenchKey(i int) []byte {
	return binary.BigEndian.AppendUint64([]byte{tagData, 0, 0, 0, 1, 0, 0, 0, 0, 'w'}, uint64(i)*0x9E3779B97F4A7C15)
}
