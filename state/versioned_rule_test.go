package state

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// versionedRuleCases are puts and deletes on one key and what Kafka Streams 4.4's versioned
// store (RocksDBVersionedStore, history retention 1,000 ms) answers: each op is "x@ts" (put
// x), "n@ts" (put null) or "d@ts" (delete) with what it returns after "=" (a put's validTo,
// -1 or notput; a delete's record value@ts-validTo, or -), and reads are "asOf=record" ("latest"
// for get(key)) after the last op. Conformance case versioned_store_ops checks the same rule
// against Kafka Streams on random operations.
var versionedRuleCases = []struct {
	name  string
	ops   []string
	reads []string
}{
	{"a tombstone at the latest value's timestamp on a key without history is forgotten",
		[]string{"x@10=-1", "n@10=-1", "y@5=-1"},
		[]string{"latest=y@5-", "4=-", "5=y@5-", "10=y@5-", "20=y@5-"}},
	{"a tombstone at the latest value's timestamp, where the history ends, is kept",
		[]string{"x@5=-1", "y@10=-1", "n@10=-1", "z@7=10"},
		[]string{"latest=-", "5=x@5-7", "7=z@7-10", "10=-"}},
	{"a tombstone at the latest value's timestamp after a gap is forgotten",
		[]string{"x@3=-1", "n@5=-1", "y@10=-1", "n@10=-1", "z@7=-1"},
		[]string{"latest=z@7-", "4=x@3-5", "5=-", "7=z@7-", "10=z@7-"}},
	{"a tombstone put before the latest value ends the history there",
		[]string{"x@3=-1", "y@10=-1", "n@5=10", "n@10=-1", "z@7=10"},
		[]string{"latest=-", "3=x@3-5", "5=-", "7=z@7-10", "10=-"}},
	{"a value put at the timestamp of the tombstone the history ends with leaves no gap",
		[]string{"n@5=-1", "x@5=-1", "n@5=-1", "y@3=5"},
		[]string{"latest=-", "3=y@3-5", "5=-"}},
	{"a value put into the gap before the latest value closes it",
		[]string{"x@3=-1", "n@5=-1", "y@10=-1", "z@7=10", "n@10=-1", "w@8=10"},
		[]string{"latest=-", "5=-", "7=z@7-8", "8=w@8-10", "10=-"}},
	{"a value put before the gap leaves it",
		[]string{"x@3=-1", "n@5=-1", "y@10=-1", "z@4=5", "n@10=-1", "w@8=-1"},
		[]string{"latest=w@8-", "4=z@4-5", "5=-", "8=w@8-"}},
	{"a value put at the gap's start closes it",
		[]string{"x@3=-1", "n@5=-1", "y@10=-1", "z@5=10", "n@10=-1", "w@8=10"},
		[]string{"latest=-", "5=z@5-8", "8=w@8-10", "10=-"}},
	{"a delete returns the version it ends, also when the tombstone is forgotten",
		[]string{"x@10=-1", "d@10=x@10-", "y@5=-1", "d@7=y@5-", "d@7=-"},
		[]string{"latest=-", "5=y@5-7", "7=-"}},
	{"a tombstone after the latest value is kept",
		[]string{"x@10=-1", "n@20=-1", "y@15=20"},
		[]string{"latest=-", "10=x@10-15", "15=y@15-20", "20=-"}},
	{"a value put at a tombstone's timestamp replaces it, and the history ends there",
		[]string{"x@3=-1", "n@5=-1", "y@5=-1", "n@5=-1", "z@4=5"},
		[]string{"latest=-", "3=x@3-4", "4=z@4-5", "5=-"}},
	{"the history retention: older puts and deletes do nothing, older reads see only the latest",
		[]string{"x@10=-1", "y@2000=-1", "z@500=notput", "d@999=-", "n@2000=-1", "w@1500=2000"},
		[]string{"latest=-", "10=-", "999=-", "1000=x@10-1500", "1500=w@1500-2000", "2000=-"}},
}

// Both versioned stores follow Kafka's put rule (pipeline.VersionedPut): the one in memory,
// the one on LevelDB (its writes buffered, or committed after every op), and the LevelDB
// store restored from the changelog the latter wrote.
func TestVersionedStoresFollowKafkasPutRule(t *testing.T) {
	spec := pipeline.StoreSpec{Name: "v", Type: pipeline.VersionedKeyValueStoreType, HistoryRetention: 1000, Logged: true}
	for _, c := range versionedRuleCases {
		t.Run(c.name, func(t *testing.T) {
			mem, err := pipeline.NewMemoryStores().VersionedStore(spec, 0)
			noErr(t, err)
			runVersionedRule(t, "memory", mem, c.ops, c.reads, nil)

			db, _ := openDB(t)
			buffered, err := db.VersionedStore(spec, 0)
			noErr(t, err)
			runVersionedRule(t, "LevelDB", buffered, c.ops, c.reads, nil)

			db, _ = openDB(t)
			committed, err := db.VersionedStore(spec, 0)
			noErr(t, err)
			var changelog []ChangelogRecord
			runVersionedRule(t, "LevelDB, committed", committed, c.ops, c.reads, func() {
				for _, r := range db.TakeChangelog() {
					changelog = append(changelog, ChangelogRecord{Store: r.Store, Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value), Timestamp: r.Timestamp})
				}
				commit(t, db)
			})

			db, _ = openDB(t)
			noErr(t, db.Restore(spec, 0, changelog, int64(len(changelog)-1)))
			restored, err := db.VersionedStore(spec, 0)
			noErr(t, err)
			checkVersionedReads(t, "LevelDB, restored", restored, c.reads)
		})
	}
}

func runVersionedRule(t *testing.T, name string, s pipeline.VersionedBytesStore, ops, reads []string, after func()) {
	t.Helper()
	for _, op := range ops {
		call, want, _ := strings.Cut(op, "=")
		kind, at, _ := strings.Cut(call, "@")
		ts, err := strconv.ParseInt(at, 10, 64)
		noErr(t, err)
		var got string
		switch kind {
		case "d":
			got = versionedText(s.Delete([]byte("k"), ts))
		default:
			var value []byte
			if kind != "n" {
				value = []byte(kind)
			}
			validTo, err := s.Put([]byte("k"), value, ts)
			noErr(t, err)
			got = strconv.FormatInt(validTo, 10)
			if validTo == pipeline.NotPut {
				got = "notput"
			}
		}
		if got != want {
			t.Fatalf("%s: %s returned %s, want %s (ops %v)", name, call, got, want, ops)
		}
		if after != nil {
			after()
		}
	}
	checkVersionedReads(t, name, s, reads)
}

func checkVersionedReads(t *testing.T, name string, s pipeline.VersionedBytesStore, reads []string) {
	t.Helper()
	for _, r := range reads {
		at, want, _ := strings.Cut(r, "=")
		var got string
		if at == "latest" {
			got = versionedText(s.Get([]byte("k")))
		} else {
			asOf, err := strconv.ParseInt(at, 10, 64)
			noErr(t, err)
			got = versionedText(s.GetAsOf([]byte("k"), asOf))
		}
		if got != want {
			t.Errorf("%s: read %s = %s, want %s", name, at, got, want)
		}
	}
}

// versionedText writes a record as value@ts-validTo (nothing after "-" for the latest), or
// "-" for none.
func versionedText(rec pipeline.VersionedBytes, found bool, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	if !found {
		return "-"
	}
	validTo := ""
	if rec.ValidTo != pipeline.ValidToUndefined {
		validTo = strconv.FormatInt(rec.ValidTo, 10)
	}
	return fmt.Sprintf("%s@%d-%s", rec.Value, rec.Timestamp, validTo)
}
