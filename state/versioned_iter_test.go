package state

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// versions renders a version iteration as "value@ts..validTo" strings and closes it.
func versions(t *testing.T, it *VersionIterator) []string {
	t.Helper()
	defer it.Close()
	var out []string
	for it.Next() {
		r := it.Record()
		out = append(out, fmt.Sprintf("%s@%d..%d", r.Value, r.Timestamp, r.ValidTo))
	}
	noErr(t, it.Err())
	return out
}

func TestVersionedVersions(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.VersionedStore(pipeline.StoreSpec{Name: "v", Type: pipeline.VersionedKeyValueStoreType, HistoryRetention: 100, Logged: true}, 0)
	noErr(t, err)
	put := func(key, value string, ts int64) {
		t.Helper()
		var v []byte
		if value != "" {
			v = []byte(value)
		}
		_, err := s.Put([]byte(key), v, ts)
		noErr(t, err)
	}
	put("k", "a", 10)
	put("k", "b", 20)
	put("other", "x", 15)
	commit(t, db)
	put("k", "", 30) // tombstone: ends b, is itself not returned
	put("k", "c", 40)

	all := []string{"a@10..20", "b@20..30", "c@40..-1"}
	cases := []struct {
		from, to int64
		want     []string
	}{
		{math.MinInt64, math.MaxInt64, all},
		{15, 15, []string{"a@10..20"}}, // a is valid at 15 although it starts before
		{20, 20, []string{"b@20..30"}}, // a's validTo is exclusive
		{19, 20, []string{"a@10..20", "b@20..30"}},
		{30, 39, nil}, // only the tombstone covers [30, 39]
		{25, 45, []string{"b@20..30", "c@40..-1"}},
		{0, 9, nil},
		{41, 1000, []string{"c@40..-1"}},
		{50, 40, nil}, // empty interval
	}
	for _, c := range cases {
		got := versions(t, s.Versions([]byte("k"), c.from, c.to, false))
		if !slices.Equal(got, c.want) {
			t.Errorf("ascending [%d, %d] = %v, want %v", c.from, c.to, got, c.want)
		}
		rev := slices.Clone(c.want)
		slices.Reverse(rev)
		got = versions(t, s.Versions([]byte("k"), c.from, c.to, true))
		if !slices.Equal(got, rev) {
			t.Errorf("descending [%d, %d] = %v, want %v", c.from, c.to, got, rev)
		}
	}
	// READ_COMMITTED sees neither the tombstone nor c: b is still the latest
	committed := versions(t, s.View(ReadCommitted).Versions([]byte("k"), math.MinInt64, math.MaxInt64, false))
	if want := []string{"a@10..20", "b@20..-1"}; !slices.Equal(committed, want) {
		t.Errorf("read committed = %v, want %v", committed, want)
	}
	if got := versions(t, s.Versions([]byte("absent"), math.MinInt64, math.MaxInt64, true)); got != nil {
		t.Errorf("absent key: %v", got)
	}
	it := s.Versions(nil, 0, 1, false)
	if it.Next() || it.Err() == nil {
		t.Error("a null key must be an error")
	}
	it.Close()

	// stream time 300, retention 100: below the cutoff only the latest version answers
	put("k", "d", 300)
	if got := versions(t, s.Versions([]byte("k"), 0, 199, false)); got != nil {
		t.Errorf("below retention, latest after toTime: %v", got)
	}
	put("only", "o", 250)
	if got, want := versions(t, s.Versions([]byte("only"), 0, 260, true)), []string{"o@250..-1"}; !slices.Equal(got, want) {
		t.Errorf("below retention, latest = %v, want %v", got, want)
	}
	if got, want := versions(t, s.Versions([]byte("k"), 200, 310, false)), []string{"c@40..300", "d@300..-1"}; !slices.Equal(got, want) {
		t.Errorf("within retention = %v, want %v", got, want)
	}
}

func TestVersionedRange(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.VersionedStore(pipeline.StoreSpec{Name: "v", Type: pipeline.VersionedKeyValueStoreType, HistoryRetention: 1000}, 0)
	noErr(t, err)
	put := func(key, value string, ts int64) {
		t.Helper()
		var v []byte
		if value != "" {
			v = []byte(value)
		}
		_, err := s.Put([]byte(key), v, ts)
		noErr(t, err)
	}
	put("a", "a1", 1)
	put("a", "a2", 2)
	put("b", "b1", 1)
	put("b", "", 5) // deleted: not listed
	put("c\x00", "c1", 3)
	commit(t, db)
	put("c\x00", "c2", 4)
	put("d", "d1", 7)
	put("b", "b3", 2) // older than b's tombstone: b stays deleted

	rng := func(view VersionedView, from, to string, reverse bool) []string {
		t.Helper()
		var f, tt []byte
		if from != "" {
			f = []byte(from)
		}
		if to != "" {
			tt = []byte(to)
		}
		it := view.Range(f, tt, reverse)
		defer it.Close()
		var out []string
		for it.Next() {
			r := it.Record()
			out = append(out, fmt.Sprintf("%q=%s@%d", it.Key(), r.Value, r.Timestamp))
		}
		noErr(t, it.Err())
		return out
	}
	all := []string{`"a"=a2@2`, `"c\x00"=c2@4`, `"d"=d1@7`}
	if got := rng(s.VersionedView, "", "", false); !slices.Equal(got, all) {
		t.Errorf("all = %v, want %v", got, all)
	}
	rev := slices.Clone(all)
	slices.Reverse(rev)
	if got := rng(s.VersionedView, "", "", true); !slices.Equal(got, rev) {
		t.Errorf("all reversed = %v, want %v", got, rev)
	}
	if got, want := rng(s.VersionedView, "b", "c\x00", false), []string{`"c\x00"=c2@4`}; !slices.Equal(got, want) {
		t.Errorf("[b, c\\0] = %v, want %v", got, want)
	}
	committed := []string{`"a"=a2@2`, `"c\x00"=c1@3`}
	if got := rng(s.View(ReadCommitted), "", "", false); !slices.Equal(got, committed) {
		t.Errorf("read committed = %v, want %v", got, committed)
	}
	slices.Reverse(committed)
	if got := rng(s.View(ReadCommitted), "", "", true); !slices.Equal(got, committed) {
		t.Errorf("read committed reversed = %v, want %v", got, committed)
	}
}
