package state

import (
	"errors"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Options.CheckChange refuses a write of a logged store before it reaches the store: the
// write fails, the store and the changelog are as before. It sees the changelog record's
// key as sent (a window store's with its start and sequence number, a session store's with
// both ends); stores that are not logged are not asked.
func TestCheckChangeRefusesBeforeTheWrite(t *testing.T) {
	tooLarge := errors.New("too large")
	var asked []int
	opts := testOptions
	opts.CheckChange = func(keyLen, valueLen int, headers pipeline.Headers) error {
		asked = append(asked, keyLen)
		if keyLen+valueLen > 20 {
			return tooLarge
		}
		return nil
	}
	db, err := Open(t.TempDir(), opts)
	noErr(t, err)
	defer db.Close()
	big := []byte(strings.Repeat("k", 30))
	spec := func(name string, typ pipeline.StoreType) pipeline.StoreSpec {
		return pipeline.StoreSpec{Name: name, Type: typ, Logged: true, Retention: 1000, WindowSize: 10, HistoryRetention: 1000}
	}
	kv, err := db.KeyValueStore(spec("kv", pipeline.KeyValueStoreType), 0)
	noErr(t, err)
	tkv, err := db.TimestampedKeyValueStore(spec("tkv", pipeline.TimestampedKeyValueStoreType), 0)
	noErr(t, err)
	win, err := db.WindowStore(spec("win", pipeline.TimestampedWindowStoreType), 0)
	noErr(t, err)
	ses, err := db.SessionStore(spec("ses", pipeline.SessionStoreType), 0)
	noErr(t, err)
	ver, err := db.VersionedStore(spec("ver", pipeline.VersionedKeyValueStoreType), 0)
	noErr(t, err)
	plain, err := db.KeyValueStore(pipeline.StoreSpec{Name: "plain", Type: pipeline.KeyValueStoreType}, 0)
	noErr(t, err)

	writes := map[string]func(key []byte) error{
		"kv put":    func(k []byte) error { return kv.Put(k, []byte("v"), 1) },
		"kv delete": func(k []byte) error { return kv.Delete(k, 1) },
		"tkv put":   func(k []byte) error { return tkv.Put(k, []byte("v"), 1) },
		"win put":   func(k []byte) error { _, err := win.Put(k, 0, []byte("v"), 1); return err },
		"ses put":   func(k []byte) error { _, err := ses.Put(k, 0, 5, []byte("v"), 1); return err },
		"ver put":   func(k []byte) error { _, err := ver.Put(k, []byte("v"), 1); return err },
	}
	for name, write := range writes {
		err := write(big)
		if !errors.Is(err, tooLarge) || !strings.Contains(err.Error(), "a write of a 30-byte key") || !strings.Contains(err.Error(), "could never be sent") {
			t.Errorf("%s of a large key: %v", name, err)
		}
		noErr(t, write([]byte("k")))
	}
	if n := len(db.Changelog()); n != len(writes) {
		t.Fatalf("%d changelog records, want %d: the refused writes logged nothing", n, len(writes))
	}
	if v, err := kv.Get(big); err != nil || v != nil {
		t.Fatalf("the refused put is in the store: %q, %v", v, err)
	}
	asked = nil
	noErr(t, plain.Put(big, []byte("v"), 1))
	if len(asked) != 0 {
		t.Fatal("a store that is not logged was asked")
	}
	asked = nil
	_, _ = win.Put([]byte("k"), 0, []byte("v"), 1)
	_, _ = ses.Put([]byte("k"), 0, 5, []byte("v"), 1)
	if len(asked) != 2 || asked[0] != 1+windowChangelogSuffix || asked[1] != 1+sessionChangelogSuffix {
		t.Fatalf("key sizes asked %v, want the changelog keys' %d and %d", asked, 1+windowChangelogSuffix, 1+sessionChangelogSuffix)
	}
	for _, r := range db.Changelog()[len(db.Changelog())-2:] {
		if r.Store == "win" && len(r.Key) != 1+windowChangelogSuffix || r.Store == "ses" && len(r.Key) != 1+sessionChangelogSuffix {
			t.Fatalf("changelog key of %s: %d bytes", r.Store, len(r.Key))
		}
	}
}
