package state

import (
	"encoding/binary"
	"testing"
)

func benchKey(i int) []byte {
	return binary.BigEndian.AppendUint64([]byte("word-"), uint64(i%10000))
}

// BenchmarkPutGet is the processing path of a count: read the key, write it back, both
// through the epoch buffer, with changelog capture.
func BenchmarkPutGet(b *testing.B) {
	db, _ := openDB(b)
	s, err := db.TimestampedKeyValueStore(StoreSpec{Name: "counts", Type: TimestampedKeyValue, Logged: true}, 0)
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

// BenchmarkCommit10k commits an epoch of 10,000 dirty keys (16 B keys, 100 B values).
func BenchmarkCommit10k(b *testing.B) {
	db, _ := openDB(b)
	s, err := db.TimestampedKeyValueStore(StoreSpec{Name: "counts", Type: TimestampedKeyValue, Logged: true}, 0)
	noErr(b, err)
	value := make([]byte, 100)
	offsets := map[ChangelogPartition]int64{{Store: "counts"}: 0}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		for j := range 10000 {
			noErr(b, s.Put(binary.BigEndian.AppendUint64([]byte("key-1234"), uint64(j)), value, int64(i)))
		}
		offsets[ChangelogPartition{Store: "counts"}] = int64(i)
		b.StartTimer()
		noErr(b, db.Commit(offsets))
	}
}

// BenchmarkIteratorScan scans 10,000 committed entries with a few buffered over them.
func BenchmarkIteratorScan(b *testing.B) {
	db, _ := openDB(b)
	s, err := db.KeyValueStore(StoreSpec{Name: "kv", Type: KeyValue}, 0)
	noErr(b, err)
	value := make([]byte, 100)
	for j := range 10000 {
		noErr(b, s.Put(benchKey(j), value))
	}
	commit(b, db)
	for j := 0; j < 10000; j += 100 {
		noErr(b, s.Put(benchKey(j), value[:10]))
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
