package state

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
)

// The outer-join buffer on LevelDB: entries committed in an earlier epoch are read through
// goleveldb's iterator, which reuses its key and value buffers on every step. Two waiting
// left records share a timestamp (adjacent buffer entries), a right record matches the
// second; when the window closes the first one must come out once, under its own key.
func TestOuterJoinBufferOnLevelDBEmitsUnderTheRightKey(t *testing.T) {
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	str := serdes.String{}
	b := pipeline.NewStreamsBuilder(pipeline.Serdes{Key: str, Value: str})
	left, err := b.Stream([]string{"left"}, pipeline.Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	right, err := b.Stream([]string{"right"}, pipeline.Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	joiner := func(_ pipeline.Record, l, r any) (any, error) { return fmt.Sprintf("%v+%v", l, r), nil }
	j, err := left.JoinStream(right, pipeline.OuterStreamJoin, joiner, pipeline.JoinWindows{Before: 5_000, After: 5_000}, pipeline.StreamJoined{})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.To("out", pipeline.Produced{}); err != nil {
		t.Fatal(err)
	}
	d, err := pipeline.NewDriver(b, pipeline.DriverOptions{Stores: db.StoreProvider(), ApplicationID: "app"})
	if err != nil {
		t.Fatal(err)
	}
	step := func(topic, key, value string, ts int64, want ...string) {
		t.Helper()
		if err := d.Pipe(topic, []byte(key), []byte(value), ts, nil); err != nil {
			t.Fatal(err)
		}
		if err := db.Commit(nil); err != nil {
			t.Fatal(err)
		}
		got := []string{}
		for {
			r, ok := d.ReadOutput("out")
			if !ok {
				break
			}
			got = append(got, fmt.Sprintf("%s:%s", r.Key, r.Value))
		}
		if want == nil {
			want = []string{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("after %s %s=%s@%d: got %q, want %q", topic, key, value, ts, got, want)
		}
	}
	step("left", "K2", "l2", 13_000)
	step("left", "K3", "l3", 13_000)
	step("right", "K3", "r3", 13_000, "K3:l3+r3")
	step("left", "K9", "l9", 20_000, "K2:l2+<nil>")
	step("right", "K8", "r8", 40_000, "K9:l9+<nil>")
}

// The engine's stores on LevelDB: found flags, NoTimestamp and no headers for plain
// key-value stores, headers kept by headers-aware ones, and the changelog timestamp of
// each write the one given to Put.
func TestStoreProviderGivesTheEngineShapes(t *testing.T) {
	db, _ := openDB(t)
	sp := db.StoreProvider()
	h := pipeline.Headers{{Key: "h", Value: []byte("x")}, {Key: "null"}}
	check := func(what string, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("%s", what)
		}
	}

	plain, err := sp.KeyValueStore(pipeline.StoreSpec{Name: "kv", Type: pipeline.KeyValueStoreType, Logged: true}, 0)
	noErr(t, err)
	noErr(t, plain.Put([]byte("k"), []byte("v"), 5, h))
	v, ts, hs, found, err := plain.GetWithHeaders([]byte("k"))
	check("plain get", err == nil && found && string(v) == "v" && ts == NoTimestamp && hs == nil)
	noErr(t, plain.Put([]byte("k"), nil, 6, nil))
	_, _, found, err = plain.Get([]byte("k"))
	check("plain delete", err == nil && !found)

	hkv, err := sp.KeyValueStore(pipeline.StoreSpec{Name: "hkv", Type: pipeline.TimestampedKeyValueStoreType, Headers: true}, 0)
	noErr(t, err)
	noErr(t, hkv.Put([]byte("k"), []byte("v"), 7, h))
	v, ts, hs, found, err = hkv.GetWithHeaders([]byte("k"))
	check("timestamped get", err == nil && found && string(v) == "v" && ts == 7 && reflect.DeepEqual(hs, h))
	_, _, found, err = hkv.Get([]byte("absent"))
	check("timestamped get of an absent key", err == nil && !found)
	it := hkv.PrefixScan([]byte("k"))
	check("timestamped scan", it.Next() && it.Timestamp() == 7)
	hs, err = it.Headers()
	check("timestamped scan headers", err == nil && reflect.DeepEqual(hs, h))
	it.Close()

	win, err := sp.WindowStore(pipeline.StoreSpec{Name: "w", Type: pipeline.TimestampedWindowStoreType, Headers: true, WindowSize: 10, Retention: 100}, 0)
	noErr(t, err)
	ok, err := win.Put([]byte("k"), 0, []byte("v"), 3, h)
	check("window put", err == nil && ok)
	v, ts, hs, found, err = win.Get([]byte("k"), 0)
	check("window get", err == nil && found && string(v) == "v" && ts == 3 && reflect.DeepEqual(hs, h))
	_, _, _, found, err = win.Get([]byte("k"), 10)
	check("window get of an absent window", err == nil && !found)
	wit := win.Fetch([]byte("k"), 0, 0, false)
	check("window fetch", wit.Next() && wit.Start() == 0 && string(wit.Value()) == "v")
	wit.Close()

	ses, err := sp.SessionStore(pipeline.StoreSpec{Name: "s", Type: pipeline.SessionStoreType, Retention: 100, Logged: true}, 0)
	noErr(t, err)
	ok, err = ses.Put([]byte("k"), 0, 10, []byte("agg"), 9)
	check("session put", err == nil && ok)
	agg, found, err := ses.FetchSession([]byte("k"), 0, 10)
	check("session fetch", err == nil && found && string(agg) == "agg")
	_, found, err = ses.FetchSession([]byte("k"), 0, 11)
	check("session fetch of an absent session", err == nil && !found)
	sit := ses.FindSessions([]byte("k"), 0, 10, false)
	check("find sessions", sit.Next() && sit.End() == 10)
	sit.Close()

	ver, err := sp.VersionedStore(pipeline.StoreSpec{Name: "v", Type: pipeline.VersionedKeyValueStoreType, HistoryRetention: 100}, 0)
	noErr(t, err)
	validTo, err := ver.Put([]byte("k"), []byte("v"), 4)
	check("versioned put", err == nil && validTo == pipeline.ValidToUndefined)
	rec, found, err := ver.Get([]byte("k"))
	check("versioned get", err == nil && found && string(rec.Value) == "v" && rec.Timestamp == 4)

	noErr(t, sp.PutMeta("s", 0, "m", []byte("meta")))
	m, err := sp.Meta("s", 0, "m")
	check("meta", err == nil && string(m) == "meta")

	var got []string
	for _, r := range db.Changelog() {
		got = append(got, fmt.Sprintf("%s@%d", r.Store, r.Timestamp))
	}
	equal(t, got, []string{"kv@5", "kv@6", "s@9"})
}

// BenchmarkCountOverLevelDB is the word count's per-record store path without Kafka: a
// grouped count on a logged timestamped store over LevelDB, 10,000 keys, a commit every
// 1,000 records.
func BenchmarkCountOverLevelDB(b *testing.B) {
	db, _ := openDB(b)
	str := serdes.String{}
	sb := pipeline.NewStreamsBuilder(pipeline.Serdes{Key: str, Value: str})
	s, err := sb.Stream([]string{"in"}, pipeline.Consumed{})
	noErr(b, err)
	g, err := s.GroupByKey(pipeline.Grouped{})
	noErr(b, err)
	counts, err := g.Count(pipeline.Materialized{StoreName: "counts", CachingDisabled: true}, serdes.Long{}, "")
	noErr(b, err)
	out, err := counts.ToStream("")
	noErr(b, err)
	noErr(b, out.To("out", pipeline.Produced{Serdes: pipeline.Serdes{Value: serdes.Long{}}}))
	d, err := pipeline.NewDriver(sb, pipeline.DriverOptions{Stores: db.StoreProvider(), ApplicationID: "app"})
	noErr(b, err)
	keys := make([][]byte, 10_000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "word-%d", i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		noErr(b, d.Pipe("in", keys[i%len(keys)], []byte("v"), int64(i), nil))
		if _, ok := d.ReadOutput("out"); !ok {
			b.Fatal("no count forwarded")
		}
		if i%1000 == 999 {
			db.TakeChangelog()
			noErr(b, db.Commit(nil))
		}
	}
}

// Over LevelDB, a suppression taking its final results from the window store finds after a
// restart the open windows the store's retention had passed while another partition held
// the watermark back: the store held them through the commit's sweep.
func TestFinalResultsHeldInTheWindowStoreSurviveARestart(t *testing.T) {
	db, _ := openDB(t)
	var out []string
	build := func() *pipeline.Topology {
		t.Helper()
		str := serdes.String{}
		sb := pipeline.NewStreamsBuilder(pipeline.Serdes{Key: str, Value: str})
		s, err := sb.Stream([]string{"in"}, pipeline.Consumed{})
		noErr(t, err)
		g, err := s.GroupByKey(pipeline.Grouped{})
		noErr(t, err)
		w, err := g.WindowedBy(pipeline.TimeWindows{Size: 10, Advance: 10})
		noErr(t, err)
		counts, err := w.Count(pipeline.Materialized{StoreName: "counts", Given: true}, serdes.Long{}, "")
		noErr(t, err)
		counts, err = counts.Suppress(pipeline.Suppressed{UntilWindowCloses: true})
		noErr(t, err)
		results, err := counts.ToStream("")
		noErr(t, err)
		noErr(t, results.Foreach(func(r pipeline.Record) error {
			out = append(out, fmt.Sprintf("%v=%v", r.Key, r.Value))
			return nil
		}, ""))
		topo, err := sb.Build(pipeline.TopologyOptions{Collector: &pipeline.Driver{}, Stores: db.StoreProvider(),
			SourcePartitions: map[string]int32{"in": 2}, ApplicationID: "app"})
		noErr(t, err)
		topo.SetAssignment([]pipeline.TopicPartition{{Topic: "in", Partition: 0}, {Topic: "in", Partition: 1}})
		return topo
	}
	topo := build()
	rec := func(p int32, key string, ts int64) {
		t.Helper()
		noErr(t, topo.Process(&pipeline.SourceRecord{Topic: "in", Partition: p, Offset: ts, Timestamp: ts, Key: []byte(key), Value: []byte("v")}))
	}
	rec(1, "k1", 1) // partition 1 holds the watermark at 1
	rec(0, "k0", 5)
	rec(0, "k0", 25)
	rec(0, "k0", 45) // the store's cutoff is 31: [0,10) and [20,30) of k0 have expired
	noErr(t, topo.FlushCaches())
	db.TakeChangelog()
	noErr(t, db.Commit(nil))
	if len(out) != 0 {
		t.Fatalf("final results before the watermark closed a window: %q", out)
	}
	db = reopen(t, db)
	topo = build()
	rec(1, "k1", 60)
	rec(0, "k0", 61) // the watermark at 60 closes every window up to [50,60)
	// Each task emits its own final results: 0_0's, then 0_1's.
	equal(t, out, []string{"[k0@0/10]=1", "[k0@20/30]=1", "[k0@40/50]=1", "[k1@0/10]=1"})
}

// BenchmarkWindowedCountOverLevelDB is the windowed bench scenario's per-record path without
// Kafka: hopping windows of 10 s advancing by 5 s with 1 s of grace, a count, suppress until
// the windows close (final results from the window store), records 1 ms apart with keys
// drawn from 10,000 words, on 4 partitions by key, each partition's records arriving in
// batches of 500 (so the watermark lags), a commit every 2,000 records.
func BenchmarkWindowedCountOverLevelDB(b *testing.B) {
	db, _ := openDB(b)
	str := serdes.String{}
	sb := pipeline.NewStreamsBuilder(pipeline.Serdes{Key: str, Value: str})
	s, err := sb.Stream([]string{"in"}, pipeline.Consumed{})
	noErr(b, err)
	g, err := s.GroupByKey(pipeline.Grouped{})
	noErr(b, err)
	w, err := g.WindowedBy(pipeline.TimeWindows{Size: 10_000, Advance: 5_000, Grace: 1_000})
	noErr(b, err)
	counts, err := w.Count(pipeline.Materialized{StoreName: "counts", Given: true}, serdes.Long{}, "")
	noErr(b, err)
	counts, err = counts.Suppress(pipeline.Suppressed{UntilWindowCloses: true})
	noErr(b, err)
	results, err := counts.ToStream("")
	noErr(b, err)
	finals := 0
	noErr(b, results.Foreach(func(pipeline.Record) error { finals++; return nil }, ""))
	topo, err := sb.Build(pipeline.TopologyOptions{Collector: &pipeline.Driver{}, Stores: db.StoreProvider(),
		SourcePartitions: map[string]int32{"in": 4}, ApplicationID: "app", CacheMaxBytes: 10 << 20})
	noErr(b, err)
	var tps []pipeline.TopicPartition
	for p := range int32(4) {
		tps = append(tps, pipeline.TopicPartition{Topic: "in", Partition: p})
	}
	topo.SetAssignment(tps)
	keys := make([][]byte, 10_000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "word-%d", i)
	}
	// The input in arrival order: each partition's records in order, 500 at a time.
	const n, batch = 1 << 18, 500
	rng := rand.New(rand.NewSource(1))
	var queues [4][]pipeline.SourceRecord
	for i := range n {
		k := rng.Intn(len(keys))
		q := &queues[k%4]
		*q = append(*q, pipeline.SourceRecord{Topic: "in", Partition: int32(k % 4), Offset: int64(len(*q)),
			Timestamp: int64(i), Key: keys[k], Value: []byte("v")})
	}
	var input []pipeline.SourceRecord
	for len(input) < n {
		for p := range queues {
			m := min(batch, len(queues[p]))
			input, queues[p] = append(input, queues[p][:m]...), queues[p][m:]
		}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		rec := input[i%n]
		rec.Timestamp += int64(i/n) * n
		rec.Offset += int64(i / n * n)
		noErr(b, topo.Process(&rec))
		if i%2000 == 1999 {
			noErr(b, topo.FlushCaches())
			db.TakeChangelog()
			noErr(b, db.Commit(nil))
		}
	}
	b.ReportMetric(float64(finals)/float64(b.N), "finals/op")
}
