package pipeline

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// streamJoinDriver builds left, right → kind join (joiner "l+r", nil printed as null) → out.
func streamJoinDriver(t *testing.T, kind StreamJoinKind, w JoinWindows, opts StreamJoined) (*Driver, *countingSensors, *StreamsBuilder) {
	t.Helper()
	b := newTestBuilder()
	l, err := b.Stream([]string{"left"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := b.Stream([]string{"right"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	str := func(v any) string {
		if v == nil {
			return "null"
		}
		return v.(string)
	}
	joiner := func(_ Record, lv, rv any) (any, error) { return str(lv) + "+" + str(rv), nil }
	j, err := l.JoinStream(r, kind, joiner, w, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	sensors := newCountingSensors()
	d, err := NewDriver(b, DriverOptions{Sensors: sensors, Stores: NewMemoryStores()})
	if err != nil {
		t.Fatal(err)
	}
	return d, sensors, b
}

type joinInput struct {
	topic string
	key   any // nil: null key
	value any // nil: null value
	ts    int64
}

// pipeJoin pipes each input and returns the output it produced, "key:value@ts".
func pipeJoin(t *testing.T, d *Driver, inputs ...joinInput) []string {
	t.Helper()
	out := []string{}
	for _, in := range inputs {
		var k, v []byte
		if in.key != nil {
			k = []byte(in.key.(string))
		}
		if in.value != nil {
			v = []byte(in.value.(string))
		}
		if err := d.Pipe(in.topic, k, v, in.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			return out
		}
		key := "null"
		if r.Key != nil {
			key = string(r.Key)
		}
		out = append(out, fmt.Sprintf("%s:%s@%d", key, r.Value, r.Timestamp))
	}
}

func expectJoin(t *testing.T, got []string, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// KStreamKStreamLeftJoinTest's vector: unmatched left records wait until their window
// closes, a matched one never produces a non-joined result.
func TestLeftStreamJoinEmitsUnmatchedOnClose(t *testing.T) {
	d, _, _ := streamJoinDriver(t, LeftStreamJoin, JoinWindows{Before: 100, After: 100}, StreamJoined{})
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "0", "A0", 1}, joinInput{"left", "1", "A1", 2}, joinInput{"left", "0", "A0-0", 3}))
	expectJoin(t, pipeJoin(t, d, joinInput{"right", "1", "a1", 3}), "1:A1+a1@3")
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "2", "dummy", 401}), "0:A0+null@1", "0:A0-0+null@3")
	expectJoin(t, pipeJoin(t, d, joinInput{"right", "2", "dummy", 401}), "2:dummy+dummy@401")
	expectJoin(t, pipeJoin(t, d, joinInput{"right", "9", "x", 2000}))
}

// The grace vector: buffered left records outlive the window by the grace period.
func TestLeftStreamJoinWaitsForGrace(t *testing.T) {
	d, _, _ := streamJoinDriver(t, LeftStreamJoin, JoinWindows{Before: 100, After: 100, Grace: 10}, StreamJoined{})
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "0", "A0", 0}, joinInput{"left", "1", "A1", 0}))
	expectJoin(t, pipeJoin(t, d, joinInput{"right", "0", "a0", 101}, joinInput{"right", "1", "a1", 101},
		joinInput{"right", "2", "a2", 101}, joinInput{"right", "3", "a3", 101}))
	expectJoin(t, pipeJoin(t, d, joinInput{"right", "0", "dummy", 1201}), "0:A0+null@0", "1:A1+null@0")
}

// Inner joins honour asymmetric bounds (l − before ≤ r ≤ l + after), join out-of-order
// records within the retention, output at the larger timestamp and never emit unmatched
// records.
func TestInnerStreamJoinBounds(t *testing.T) {
	d, sensors, _ := streamJoinDriver(t, InnerStreamJoin, JoinWindows{Before: 10, After: 5, Grace: 20}, StreamJoined{})
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "k", "L100", 100}))
	expectJoin(t, pipeJoin(t, d,
		joinInput{"right", "k", "r89", 89},   // 100 − 10 = 90 > 89
		joinInput{"right", "k", "r90", 90},   // lower bound, inclusive
		joinInput{"right", "k", "r105", 105}, // upper bound, inclusive
		joinInput{"right", "k", "r106", 106}, // beyond after
		joinInput{"right", "j", "r100", 100}, // other key
	), "k:L100+r90@100", "k:L100+r105@105")
	// An out-of-order left record still finds the right records it is due.
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "k", "L95", 95}), "k:L95+r89@95", "k:L95+r90@95")
	// Both sides keep duplicates.
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "k", "L100b", 100}), "k:L100b+r90@100", "k:L100b+r105@105")
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "k", nil, 100}, joinInput{"left", nil, "x", 100}))
	if sensors.dropped["null-value"] != 1 || sensors.dropped["null-key"] != 1 {
		t.Fatalf("dropped %v, want one null-key and one null-value", sensors.dropped)
	}
}

// A null value is not put into its side's window store, so it does not advance the store's
// retention either, as in Kafka's RocksDB window store (its in-memory one advances it and
// would no longer find L215): R245 finds both partners, in timestamp order (Kafka Streams
// 4.4 gives these results).
func TestStreamJoinNullValuesLeaveTheWindowStoreAlone(t *testing.T) {
	d, _, _ := streamJoinDriver(t, InnerStreamJoin, JoinWindows{Before: 50, After: 50, Grace: 20}, StreamJoined{})
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "e", "L215", 215}, joinInput{"left", "e", "L267", 267}, joinInput{"left", "b", nil, 362}))
	expectJoin(t, pipeJoin(t, d, joinInput{"right", "e", "R245", 245}), "e:L215+R245@245", "e:L267+R245@267")
}

// Records older than the stores' retention (before + after + grace) are neither kept nor
// found.
func TestStreamJoinDropsExpiredRecords(t *testing.T) {
	d, _, _ := streamJoinDriver(t, InnerStreamJoin, JoinWindows{Before: 10, After: 10, Grace: 5}, StreamJoined{})
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "k", "L0", 0}, joinInput{"left", "z", "Z", 100}))
	expectJoin(t, pipeJoin(t, d, joinInput{"right", "k", "r5", 5}))
	expectJoin(t, pipeJoin(t, d, joinInput{"right", "z", "r95", 95}), "z:Z+r95@100")
}

// Outer joins buffer both sides; a null key on an outer side joins at once (KIP-962).
func TestOuterStreamJoin(t *testing.T) {
	d, sensors, _ := streamJoinDriver(t, OuterStreamJoin, JoinWindows{Before: 10, After: 10}, StreamJoined{})
	expectJoin(t, pipeJoin(t, d, joinInput{"right", "a", "ra", 5}, joinInput{"left", "b", "lb", 6}))
	expectJoin(t, pipeJoin(t, d, joinInput{"left", nil, "ln", 7}, joinInput{"right", nil, "rn", 7}), "null:ln+null@7", "null:null+rn@7")
	expectJoin(t, pipeJoin(t, d, joinInput{"right", "b", "rb", 8}), "b:lb+rb@8")
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "c", "lc", 15}))
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "c", "lc2", 16}), "a:null+ra@5")
	// Closed on arrival: emitted at once.
	expectJoin(t, pipeJoin(t, d, joinInput{"right", "d", "rd", 40}), "c:lc+null@15", "c:lc2+null@16")
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "e", "le", 20}), "e:le+null@20")
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "k", nil, 40}))
	if sensors.dropped["null-value"] != 1 {
		t.Fatalf("dropped %v, want one null-value", sensors.dropped)
	}
}

// A left join's right side is inner: a null key there is dropped.
func TestLeftStreamJoinDropsNullKeyOnRight(t *testing.T) {
	d, sensors, _ := streamJoinDriver(t, LeftStreamJoin, JoinWindows{Before: 10, After: 10}, StreamJoined{})
	expectJoin(t, pipeJoin(t, d, joinInput{"right", nil, "rn", 7}, joinInput{"left", nil, "ln", 7}), "null:ln+null@7")
	if sensors.dropped["null-key"] != 1 {
		t.Fatalf("dropped %v, want one null-key", sensors.dropped)
	}
}

func TestStreamJoinNames(t *testing.T) {
	// describe() prints a processor's stores in Java HashSet order.
	cases := []struct {
		kind StreamJoinKind
		opts StreamJoined
		want []string
	}{
		{InnerStreamJoin, StreamJoined{}, []string{
			"KSTREAM-WINDOWED-0000000002 (stores: [KSTREAM-JOINTHIS-0000000004-store])",
			"KSTREAM-JOINTHIS-0000000004 (stores: [KSTREAM-JOINOTHER-0000000005-store])",
			"KSTREAM-JOINOTHER-0000000005 (stores: [KSTREAM-JOINTHIS-0000000004-store])",
			"KSTREAM-MERGE-0000000006 (stores: [])"}},
		{LeftStreamJoin, StreamJoined{}, []string{
			"KSTREAM-WINDOWED-0000000003 (stores: [KSTREAM-OUTEROTHER-0000000005-store])",
			"KSTREAM-OUTEROTHER-0000000005 (stores: [KSTREAM-JOINTHIS-0000000004-store, KSTREAM-OUTERSHARED-0000000004-store])"}},
		{OuterStreamJoin, StreamJoined{Name: "j", StoreName: "s"}, []string{
			"j-this-windowed (stores: [s-outer-this-join-store])",
			"j-outer-this-join (stores: [s-outer-shared-join-store, s-outer-other-join-store])",
			"j-outer-other-join (stores: [s-outer-shared-join-store, s-outer-this-join-store])",
			"j-merge (stores: [])"}},
		{LeftStreamJoin, StreamJoined{StoreName: "s"}, []string{
			"KSTREAM-JOINTHIS-0000000004 (stores: [s-left-shared-join-store, s-outer-other-join-store])"}},
	}
	for _, c := range cases {
		_, _, b := streamJoinDriver(t, c.kind, JoinWindows{Before: 1, After: 1}, c.opts)
		text := b.Describe().String()
		for _, w := range c.want {
			if !strings.Contains(text, "Processor: "+w) {
				t.Errorf("describe lacks %q:\n%s", w, text)
			}
		}
	}
	for _, name := range []string{"s-outer-this-join-store", "s-outer-shared-join-store"} {
		_, _, b := streamJoinDriver(t, OuterStreamJoin, JoinWindows{Before: 1, After: 1}, StreamJoined{StoreName: "s"})
		found := false
		for _, st := range b.Stores() {
			found = found || st.Name == name
		}
		if !found {
			t.Errorf("store %s not declared", name)
		}
	}
}

func TestJoinWindowsValidate(t *testing.T) {
	b := newTestBuilder()
	l, _ := b.Stream([]string{"left"}, Consumed{})
	r, _ := b.Stream([]string{"right"}, Consumed{})
	joiner := func(Record, any, any) (any, error) { return nil, nil }
	if _, err := l.JoinStream(r, InnerStreamJoin, joiner, JoinWindows{Before: -5, After: 2}, StreamJoined{}); err == nil || !strings.Contains(err.Error(), "must not be negative") {
		t.Fatalf("negative interval: %v", err)
	}
	if _, err := l.JoinStream(r, InnerStreamJoin, joiner, JoinWindows{Before: 1, After: 1, Grace: -1}, StreamJoined{}); err == nil || !strings.Contains(err.Error(), "grace") {
		t.Fatalf("negative grace: %v", err)
	}
}

// The outer-join buffer lives in a store: a restart neither loses a waiting record nor
// emits it twice.
func TestLeftStreamJoinBufferSurvivesRestart(t *testing.T) {
	stores := NewMemoryStores()
	run := func(inputs ...joinInput) []string {
		b := newTestBuilder()
		l, _ := b.Stream([]string{"left"}, Consumed{})
		r, _ := b.Stream([]string{"right"}, Consumed{})
		joiner := func(_ Record, lv, rv any) (any, error) { return fmt.Sprintf("%v+%v", lv, rv), nil }
		j, err := l.JoinStream(r, LeftStreamJoin, joiner, JoinWindows{Before: 10, After: 10}, StreamJoined{})
		if err != nil {
			t.Fatal(err)
		}
		if err := j.To("out", Produced{}); err != nil {
			t.Fatal(err)
		}
		d, err := NewDriver(b, DriverOptions{Stores: stores, ApplicationID: "app"})
		if err != nil {
			t.Fatal(err)
		}
		return pipeJoin(t, d, inputs...)
	}
	expectJoin(t, run(joinInput{"left", "a", "la", 0}, joinInput{"left", "b", "lb", 1}))
	expectJoin(t, run(joinInput{"right", "b", "rb", 5}, joinInput{"right", "z", "x", 20}), "b:lb+rb@5", "a:la+<nil>@0")
	expectJoin(t, run(joinInput{"right", "z", "y", 40}))
}

// Two unmatched left records share a timestamp, so their buffer entries sit next to each
// other; the right record that matches the second one leaves the first waiting. When its
// window closes the first one comes out once, under its own key. The buffer scan used to
// keep the iterator's key and value past Next and emitted the neighbour's key instead.
func TestOuterStreamJoinBufferEmitsEachWaitingRecordUnderItsKey(t *testing.T) {
	d, _, _ := streamJoinDriver(t, OuterStreamJoin, JoinWindows{Before: 5_000, After: 5_000}, StreamJoined{})
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "K2", "l2", 13_000}, joinInput{"left", "K3", "l3", 13_000}))
	expectJoin(t, pipeJoin(t, d, joinInput{"right", "K3", "r3", 13_000}), "K3:l3+r3@13000")
	expectJoin(t, pipeJoin(t, d, joinInput{"left", "K9", "l9", 20_000}), "K2:l2+null@13000")
	expectJoin(t, pipeJoin(t, d, joinInput{"right", "K8", "r8", 40_000}), "K9:l9+null@20000")
}

// Kafka Streams' KStreamKStreamOuterJoinTest semantics without the spurious-result fix
// (JoinWindows.of): an outer join emits each unmatched record at once, on both sides, then
// every match as it comes; no outer-join buffer is declared.
func TestStreamOuterJoinWithoutSpuriousResultFix(t *testing.T) {
	d, _, b := streamJoinDriver(t, OuterStreamJoin, DeprecatedJoinWindows(100), StreamJoined{})
	for _, spec := range b.Stores() {
		if spec.Type != WindowStoreType || spec.Retention != 24*3600*1000 {
			t.Errorf("store %+v, want only window stores retaining before + after + (24 h - 2d)", spec)
		}
	}
	expectJoin(t, pipeJoin(t, d,
		joinInput{"left", "0", "A0", 0}, joinInput{"right", "1", "a1", 5},
		joinInput{"right", "0", "a0", 300}, joinInput{"right", "0", "b0", 50},
		joinInput{"left", "1", "A1", 100}),
		"0:A0+null@0", "1:null+a1@5", "0:null+a0@300", "0:A0+b0@50", "1:A1+a1@100")
}

// A late partner of a record whose non-joined result is out joins it too, as in Kafka
// Streams 4.4: the other window store still holds the record.
func TestStreamOuterJoinLatePartnerJoinsAfterTheNonJoinedResult(t *testing.T) {
	for _, kind := range []StreamJoinKind{LeftStreamJoin, OuterStreamJoin} {
		d, _, _ := streamJoinDriver(t, kind, JoinWindows{Before: 5, After: 5}, StreamJoined{})
		got := pipeJoin(t, d,
			joinInput{"left", "a", "A", 10},
			joinInput{"left", "b", "B", 17}, // 10 + 5 < 17: A+null is out
			joinInput{"right", "a", "x", 12},
			joinInput{"right", "b", "y", 18})
		expectJoin(t, got, "a:A+null@10", "a:A+x@12", "b:B+y@18")
	}
}

// The outer-join buffer is scanned as KStreamKStreamJoin scans it (Kafka Streams 4.4 gives
// these results): only for a record at the join's stream time, before it joins, and only
// once minTime + the triggering side's after + grace is behind the stream time, minTime
// being the last entry the previous scan looked at (here B145, so that C57, closed at 135,
// waits for R191); a record arriving with its window (without grace) behind the stream time
// is joined with nil at once (D89, E250); null keys and values move the stream time without
// triggering a scan; the results carry the triggering record's headers.
func TestLeftStreamJoinEmitsNonJoinedAsKafkaStreams(t *testing.T) {
	d, _, _ := streamJoinDriver(t, LeftStreamJoin, JoinWindows{Before: 40, After: 40, Grace: 30}, StreamJoined{})
	for _, c := range []struct {
		in     joinInput
		header string
		want   []string
	}{
		{joinInput{"left", "d", "D34", 34}, "", nil},
		{joinInput{"right", nil, "N", 0}, "", nil},
		{joinInput{"left", "c", "C57", 57}, "", nil},
		{joinInput{"left", "b", "B93", 93}, "", nil},
		{joinInput{"left", "c", "C107", 107}, "x", []string{"d:D34+null@34[x]"}},
		{joinInput{"left", "b", "B135", 135}, "", nil},
		{joinInput{"left", "d", "D89", 89}, "y", []string{"d:D89+null@89[y]"}},
		{joinInput{"left", "b", "B145", 145}, "", nil},
		{joinInput{"right", "c", "R191", 191}, "z", []string{"c:C57+null@57[z]", "b:B93+null@93[z]", "c:C107+null@107[z]"}},
		{joinInput{"right", "e", nil, 300}, "", nil},
		{joinInput{"left", "e", "E250", 250}, "", []string{"e:E250+null@250"}},
		{joinInput{"left", "f", "F301", 301}, "w", []string{"b:B135+null@135[w]", "b:B145+null@145[w]"}},
	} {
		var k, v []byte
		if c.in.key != nil {
			k = []byte(c.in.key.(string))
		}
		if c.in.value != nil {
			v = []byte(c.in.value.(string))
		}
		var hs Headers
		if c.header != "" {
			hs = Headers{{Key: "h", Value: []byte(c.header)}}
		}
		if err := d.Pipe(c.in.topic, k, v, c.in.ts, hs); err != nil {
			t.Fatal(err)
		}
		var got []string
		for r, ok := d.ReadOutput("out"); ok; r, ok = d.ReadOutput("out") {
			s := fmt.Sprintf("%s:%s@%d", r.Key, r.Value, r.Timestamp)
			if len(r.Headers) > 0 {
				s += "[" + string(r.Headers[0].Value) + "]"
			}
			got = append(got, s)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Fatalf("%v: got %q, want %q", c.in, got, c.want)
		}
	}
}
