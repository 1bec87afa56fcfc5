package pipeline

import (
	"fmt"
	"strings"
	"testing"
)

// funcProcessor is a UserProcessor made of one function.
type funcProcessor struct {
	ctx     *ProcessorContext
	process func(ctx *ProcessorContext, rec Record) error
}

func (p *funcProcessor) Init(ctx *ProcessorContext) error { p.ctx = ctx; return nil }
func (p *funcProcessor) Process(rec Record) error         { return p.process(p.ctx, rec) }
func (p *funcProcessor) Close() error                     { return nil }

// storeDriver declares specs, connects the stores named in connected to one processor that
// runs process, and returns a driver over in-memory stores.
func storeDriver(t *testing.T, specs []StoreSpec, connected []string, process func(ctx *ProcessorContext, rec Record) error) *Driver {
	t.Helper()
	b := newTestBuilder()
	for _, s := range specs {
		if err := b.AddStateStore(s); err != nil {
			t.Fatal(err)
		}
	}
	s, err := b.Stream([]string{"in"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	supplier := func() (UserProcessor, error) { return &funcProcessor{process: process}, nil }
	if _, err := s.Process(supplier, connected, ""); err != nil {
		t.Fatal(err)
	}
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores(), ApplicationID: "app"})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAddStateStoreChecksSpecs(t *testing.T) {
	for _, c := range []struct {
		spec StoreSpec
		want string
	}{
		{StoreSpec{Name: "w", Type: WindowStoreType, Retention: 10}, "window size 0 ms must be positive"},
		{StoreSpec{Name: "w", Type: TimestampedWindowStoreType, Retention: 5, WindowSize: 10}, "no smaller than the window size"},
		{StoreSpec{Name: "s", Type: SessionStoreType}, "session store retention 0 ms must be positive"},
		{StoreSpec{Name: "v", Type: VersionedKeyValueStoreType, HistoryRetention: -1}, "must not be negative"},
		{StoreSpec{Name: "k", Type: KeyValueStoreType, Headers: true}, "headers-aware stores"},
		{StoreSpec{Name: "s", Type: SessionStoreType, Retention: 1, RetainDuplicates: true}, "retainDuplicates applies to window stores only"},
		{StoreSpec{Name: "x", Type: StoreType(42)}, "unknown store type"},
	} {
		err := newTestBuilder().AddStateStore(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), fmt.Sprintf("%q", c.spec.Name)) {
			t.Errorf("%+v: err = %v, want %q", c.spec, err, c.want)
		}
	}
}

var storeKinds = []StoreSpec{
	{Name: "w", Type: TimestampedWindowStoreType, Retention: 100, WindowSize: 10, Headers: true},
	{Name: "s", Type: SessionStoreType, Retention: 100},
	{Name: "v", Type: VersionedKeyValueStoreType, HistoryRetention: 50},
	{Name: "kv", Type: TimestampedKeyValueStoreType, Headers: true},
}

func TestProcessorContextGivesEachStoreKind(t *testing.T) {
	var errs []string
	d := storeDriver(t, storeKinds, []string{"w", "s", "v"}, func(ctx *ProcessorContext, rec Record) error {
		if typ, err := ctx.StoreType("w"); err != nil || typ != TimestampedWindowStoreType {
			return fmt.Errorf("StoreType(w) = %v, %v", typ, err)
		}
		w, err := ctx.WindowStore("w")
		if err != nil {
			return err
		}
		if _, err := w.PutWithHeaders(rec.Key, rec.Value, rec.Timestamp-rec.Timestamp%10, rec.Timestamp, rec.Headers); err != nil {
			return err
		}
		s, err := ctx.SessionStore("s")
		if err != nil {
			return err
		}
		if _, err := s.Put(rec.Key, rec.Timestamp, rec.Timestamp+1, rec.Value, rec.Timestamp); err != nil {
			return err
		}
		v, err := ctx.VersionedStore("v")
		if err != nil {
			return err
		}
		if _, err := v.Put(rec.Key, rec.Value, rec.Timestamp); err != nil {
			return err
		}
		for _, e := range []error{
			func() error { _, err := ctx.SessionStore("w"); return err }(),
			func() error { _, err := ctx.StateStore("w"); return err }(),
			func() error { _, err := ctx.VersionedStore("kv"); return err }(),
		} {
			errs = append(errs, fmt.Sprint(e))
		}
		return nil
	})
	if err := d.Pipe("in", []byte("k"), []byte("x"), 23, Headers{{Key: "h", Value: []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"state store w is a timestampedWindow store, not a session store",
		"state store w is a timestampedWindow store, not a key-value store",
		"processor KSTREAM-PROCESSOR-0000000001 has no access to state store kv",
	}
	for i, w := range want {
		if !strings.Contains(errs[i], w) {
			t.Errorf("error %d = %q, want %q", i, errs[i], w)
		}
	}
	w, err := d.WindowStore("w", 0)
	if err != nil {
		t.Fatal(err)
	}
	got, found, err := w.Fetch("k", 20)
	if err != nil || !found || got.Value != "x" || got.Start != 20 || got.End != 30 || got.Timestamp != 23 || string(got.Headers[0].Value) != "1" {
		t.Fatalf("window = %+v %v %v", got, found, err)
	}
	s, _ := d.SessionStore("s", 0)
	if agg, found, err := s.FetchSession("k", 23, 24); err != nil || !found || agg != "x" {
		t.Fatalf("session = %v %v %v", agg, found, err)
	}
	v, _ := d.VersionedStore("v", 0)
	if rec, found, err := v.Get("k"); err != nil || !found || rec != (VersionedRecord{Value: "x", Timestamp: 23, ValidTo: ValidToUndefined}) {
		t.Fatalf("versioned = %+v %v %v", rec, found, err)
	}
}

// windowLister returns a function listing an iterator's windows as key@start=value.
func windowLister(t *testing.T) func(it *WindowIterator, err error) string {
	return func(it *WindowIterator, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		var out []string
		for it.Next() {
			w := it.Window()
			out = append(out, fmt.Sprintf("%v@%d=%v", w.Key, w.Start, w.Value))
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		return strings.Join(out, " ")
	}
}

func TestMemoryWindowStoreOrderAndRetention(t *testing.T) {
	b := newTestBuilder()
	spec := StoreSpec{Name: "w", Type: WindowStoreType, Retention: 100, WindowSize: 10}
	if err := b.AddStateStore(spec); err != nil {
		t.Fatal(err)
	}
	s, _ := b.Stream([]string{"in"}, Consumed{})
	s.Process(func() (UserProcessor, error) {
		return &funcProcessor{process: func(*ProcessorContext, Record) error { return nil }}, nil
	}, []string{"w"}, "")
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores(), ApplicationID: "app"})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := d.WindowStore("w", 0)
	windows := windowLister(t)
	for _, p := range []struct {
		k     string
		start int64
	}{{"b", 0}, {"a", 10}, {"a", 0}, {"c", 50}} {
		if ok, err := w.Put(p.k, p.k+fmt.Sprint(p.start), p.start, p.start); !ok || err != nil {
			t.Fatalf("put %v: %v %v", p, ok, err)
		}
	}
	if got := windows(w.FetchKey("a", 0, 10, true)); got != "a@10=a10 a@0=a0" {
		t.Fatalf("backward fetch = %s", got)
	}
	if got := windows(w.FetchRange("a", "b", 0, 5, false)); got != "a@0=a0 b@0=b0" {
		t.Fatalf("range = %s", got)
	}
	if got := windows(w.FetchRange(nil, "a", 0, 100, false)); got != "a@0=a0 a@10=a10" {
		t.Fatalf("open range = %s", got)
	}
	// Stream time 150: windows starting before 51 expire; 40 is dropped.
	if ok, err := w.Put("c", "c150", 150, 150); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, _ := w.Put("c", "late", 40, 150); ok {
		t.Fatal("an expired window was written")
	}
	if got := windows(w.All(false), nil); got != "c@150=c150" {
		t.Fatalf("all after expiry = %s", got)
	}
	if got := windows(w.FetchAll(0, 200, true), nil); got != "c@150=c150" {
		t.Fatalf("fetchAll = %s", got)
	}
}

func TestMemorySessionAndVersionedStores(t *testing.T) {
	d := storeDriver(t, storeKinds, []string{"s", "v"}, func(*ProcessorContext, Record) error { return nil })
	s, _ := d.SessionStore("s", 0)
	for _, p := range [][2]int64{{0, 10}, {20, 30}, {5, 40}} {
		if _, err := s.Put("k", p[0], p[1], fmt.Sprint(p), 0); err != nil {
			t.Fatal(err)
		}
	}
	it, err := s.FindSessions("k", 15, 20, false)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for it.Next() {
		got = append(got, fmt.Sprint(it.Session().Value))
	}
	it.Close()
	if strings.Join(got, " ") != "[20 30] [5 40]" {
		t.Fatalf("findSessions = %v", got)
	}
	if err := s.Remove("k", 20, 30, 0); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := s.FetchSession("k", 20, 30); found {
		t.Fatal("removed session still there")
	}
	if _, err := s.Put("k", 50, 40, "x", 0); err == nil {
		t.Fatal("a session ending before it starts was accepted")
	}

	v, _ := d.VersionedStore("v", 0)
	for _, c := range []struct {
		value   any
		ts      int64
		validTo int64
	}{{"a", 10, ValidToUndefined}, {"c", 30, ValidToUndefined}, {"b", 20, 30}, {"d", 100, ValidToUndefined}, {"late", 40, NotPut}} {
		if got, err := v.Put("k", c.value, c.ts); err != nil || got != c.validTo {
			t.Fatalf("put %v@%d = %d %v, want %d", c.value, c.ts, got, err, c.validTo)
		}
	}
	if rec, found, _ := v.GetAsOf("k", 60); !found || rec.Value != "c" || rec.ValidTo != 100 {
		t.Fatalf("asOf 60 = %+v %v", rec, found)
	}
	if _, found, _ := v.GetAsOf("k", 25); found {
		t.Fatal("asOf below the history retention answered with an old version")
	}
	if rec, found, _ := v.Delete("k", 120); !found || rec.Value != "d" {
		t.Fatalf("delete = %+v %v", rec, found)
	}
	if _, found, _ := v.Get("k"); found {
		t.Fatal("deleted key still found")
	}
}

// TestWindowStoreFetchMatchesFetchKey checks that the point read of the in-memory store
// finds what a one-window range fetch finds first: present, absent, deleted and expired
// windows, headers, and the first of duplicates.
func TestWindowStoreFetchMatchesFetchKey(t *testing.T) {
	specs := []StoreSpec{
		{Name: "plain", Type: WindowStoreType, Retention: 100, WindowSize: 10},
		{Name: "headers", Type: TimestampedWindowStoreType, Retention: 100, WindowSize: 10, Headers: true},
		{Name: "dups", Type: TimestampedWindowStoreType, Retention: 100, WindowSize: 10, Headers: true, RetainDuplicates: true},
	}
	d := storeDriver(t, specs, nil, func(*ProcessorContext, Record) error { return nil })
	for _, spec := range specs {
		w, err := d.WindowStore(spec.Name, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			k     string
			v     any
			start int64
		}{{"a", "a0", 0}, {"a", "a10", 10}, {"a", "a10'", 10}, {"b", "b20", 20}, {"b", nil, 20}, {"c", "c60", 60}, {"c", "c105", 105}} {
			if _, err := w.PutWithHeaders(p.k, p.v, p.start, p.start+1, Headers{{Key: "h", Value: []byte(fmt.Sprint(p.v))}}); err != nil {
				t.Fatal(err)
			}
		}
		// Stream time 105: the window at 0 has expired.
		want := map[string]string{"a@10": "a10", "c@60": "c60", "c@105": "c105"}
		if spec.RetainDuplicates {
			want["b@20"] = "b20"
		} else {
			want["a@10"] = "a10'"
		}
		for _, k := range []string{"a", "b", "c", "z"} {
			for _, start := range []int64{0, 5, 10, 20, 60, 105} {
				at := fmt.Sprintf("%s@%d", k, start)
				it, err := w.FetchKey(k, start, start, false)
				if err != nil {
					t.Fatal(err)
				}
				fromIter := ""
				if it.Next() {
					fromIter = renderWindow(it.Window())
				}
				it.Close()
				if err := it.Err(); err != nil {
					t.Fatal(err)
				}
				got, found, err := w.Fetch(k, start)
				if err != nil {
					t.Fatal(err)
				}
				point := ""
				if found {
					if got.Key != k || got.Start != start || got.End != start+10 {
						t.Errorf("%s %s: window %+v", spec.Name, at, got)
					}
					point = renderWindow(got)
				}
				wantHere := ""
				if v, ok := want[at]; ok && spec.Headers {
					wantHere = fmt.Sprintf("%s@%d [h=%s]", v, start+1, v)
				} else if ok {
					wantHere = fmt.Sprintf("%s@%d []", v, start+1)
				}
				if point != fromIter || point != wantHere {
					t.Errorf("%s %s: fetch %q, fetchKey %q, want %q", spec.Name, at, point, fromIter, wantHere)
				}
			}
		}
	}
}

func renderWindow(w Window) string {
	var h []string
	for _, x := range w.Headers {
		h = append(h, x.Key+"="+string(x.Value))
	}
	return fmt.Sprintf("%v@%d [%s]", w.Value, w.Timestamp, strings.Join(h, " "))
}
