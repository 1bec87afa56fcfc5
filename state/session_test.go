package state

import (
	"bytes"
	"math"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

func TestSessionStore(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.SessionStore(pipeline.StoreSpec{Name: "s", Type: pipeline.SessionStoreType, Retention: 1000, Logged: true}, 0)
	noErr(t, err)
	for _, x := range []struct {
		key        string
		start, end int64
	}{{"k", 0, 10}, {"k", 20, 30}, {"k", 40, 50}, {"j", 20, 30}, {"l", 5, 5}} {
		ok, err := s.Put([]byte(x.key), x.start, x.end, []byte(x.key), 7)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	commit(t, db)
	// sessions that end at or after 15 and start at or before 45
	equal(t, sessions(t, s.FindSessions([]byte("k"), 15, 45, false)), []string{"k[20,30]=k", "k[40,50]=k"})
	equal(t, sessions(t, s.FindSessions([]byte("k"), 15, 45, true)), []string{"k[40,50]=k", "k[20,30]=k"})
	equal(t, sessions(t, s.FindSessions([]byte("k"), 10, 0, false)), []string{"k[0,10]=k"})
	equal(t, sessions(t, s.FindSessions([]byte("k"), 51, 100, false)), nil)
	equal(t, sessions(t, s.FindSessionsRange([]byte("j"), []byte("k"), 25, 25, false)), []string{"j[20,30]=j", "k[20,30]=k"})
	equal(t, sessions(t, s.Fetch([]byte("k"), false)), []string{"k[0,10]=k", "k[20,30]=k", "k[40,50]=k"})
	equal(t, sessions(t, s.FetchRange([]byte("k"), nil, true)), []string{"l[5,5]=l", "k[40,50]=k", "k[20,30]=k", "k[0,10]=k"})
	if v, err := s.FetchSession([]byte("k"), 20, 30); err != nil || string(v) != "k" {
		t.Fatalf("fetchSession: %q %v", v, err)
	}
	if v, _ := s.FetchSession([]byte("k"), 20, 31); v != nil {
		t.Fatalf("fetchSession of a missing session: %q", v)
	}
	noErr(t, s.Remove([]byte("k"), 20, 30, 7))
	equal(t, sessions(t, s.Fetch([]byte("k"), false)), []string{"k[0,10]=k", "k[40,50]=k"})
	equal(t, sessions(t, s.View(ReadCommitted).Fetch([]byte("k"), false)), []string{"k[0,10]=k", "k[20,30]=k", "k[40,50]=k"})

	cl := db.Changelog()
	if len(cl) != 1 || !bytes.Equal(cl[0].Key, []byte{'k', 0, 0, 0, 0, 0, 0, 0, 30, 0, 0, 0, 0, 0, 0, 0, 20}) || cl[0].Value != nil || cl[0].Timestamp != 7 {
		t.Fatalf("remove changelog record %+v", cl)
	}
	if _, err := s.Put([]byte("k"), 5, 4, []byte("x"), 7); err == nil {
		t.Fatal("session with start after end accepted")
	}
}

func TestSessionRetention(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.SessionStore(pipeline.StoreSpec{Name: "s", Type: pipeline.SessionStoreType, Retention: 10}, 0)
	noErr(t, err)
	_, err = s.Put([]byte("k"), 0, 5, []byte("old"), 0)
	noErr(t, err)
	_, err = s.Put([]byte("k"), 20, 20, []byte("new"), 0)
	noErr(t, err)
	ok, err := s.Put([]byte("k"), 8, 10, []byte("late"), 0)
	if err != nil || ok {
		t.Fatalf("expired session put: %v %v", ok, err)
	}
	equal(t, sessions(t, s.Fetch([]byte("k"), false)), []string{"k[20,20]=new"})
	if v, _ := s.FetchSession([]byte("k"), 0, 5); v != nil {
		t.Fatal("expired session visible")
	}
	commit(t, db)
	if n := countRaw(t, db, s.p); n != 1 {
		t.Fatalf("%d sessions in LevelDB, want 1", n)
	}
}

// A held session stays stored however far the retention moves on: commits keep it,
// FetchHeld finds it, other reads do not; once the hold moves past it, the next sweep
// deletes it.
func TestSessionHoldKeepsExpiredSessionsStored(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.SessionStore(pipeline.StoreSpec{Name: "s", Type: pipeline.SessionStoreType, Retention: 100}, 0)
	noErr(t, err)
	put := func(key string, end int64) {
		t.Helper()
		ok, err := s.Put([]byte(key), end, end, []byte("v"), end)
		if err != nil || !ok {
			t.Fatalf("put %s@%d: %v %v", key, end, ok, err)
		}
	}
	s.HoldFrom(10)
	put("a", 0)
	put("b", 10)
	put("c", 200) // cutoff 101: a and b have expired in the same epoch
	commit(t, db)
	equal(t, sessions(t, s.FetchRange(nil, nil, false)), []string{"c[200,200]=v"})
	equal(t, sessions(t, s.FetchHeld(0, math.MaxInt64)), []string{"b[10,10]=v", "c[200,200]=v"})
	s.HoldFrom(math.MaxInt64)
	put("d", 320) // cutoff 221
	commit(t, db)
	equal(t, sessions(t, s.FetchHeld(0, math.MaxInt64)), []string{"d[320,320]=v"})
	if n := countRaw(t, db, s.p); n != 1 {
		t.Fatalf("%d sessions in LevelDB, want d", n)
	}
}

// A put of a held session is kept however far past the retention it ends; other reads
// still hide it.
func TestSessionHoldKeepsPutsOfHeldSessions(t *testing.T) {
	db, _ := openDB(t)
	s, err := db.SessionStore(pipeline.StoreSpec{Name: "s", Type: pipeline.SessionStoreType, Retention: 100}, 0)
	noErr(t, err)
	s.HoldFrom(50)
	for _, end := range []int64{300, 40, 60} { // cutoff 201: 40 is not held, 60 is
		_, err := s.Put([]byte("k"), end, end, []byte("v"), end)
		noErr(t, err)
	}
	commit(t, db)
	equal(t, sessions(t, s.FetchRange(nil, nil, false)), []string{"k[300,300]=v"})
	equal(t, sessions(t, s.FetchHeld(0, math.MaxInt64)), []string{"k[60,60]=v", "k[300,300]=v"})
}
