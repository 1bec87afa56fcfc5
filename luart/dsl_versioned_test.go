package luart

import (
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

const graceJoinScript = prelude + `
local table = b:table("tableTopic2", {keySerde = "integer", valueSerde = "string",
  materialized = {name = "V-grace", type = "versionedKeyValue", historyRetention = "5m"}})
b:stream("streamTopic", {keySerde = "integer", valueSerde = "string"})
  :join(table, function(v1, v2) return v1 .. "+" .. v2 end, {name = "Grace", gracePeriod = 2})
  :to("out", {keySerde = "integer"})
return b`

func pipeInts(t *testing.T, d *pipeline.Driver, topic, prefix string, n int, ts func(i int) int64) {
	t.Helper()
	for i := range n {
		if err := d.Pipe(topic, intKey(int32(i)), []byte(prefix+itoa(int64(i))), ts(i), nil); err != nil {
			t.Fatal(err)
		}
	}
}

func intKey(i int32) []byte { return []byte{byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)} }

func intOutputs(d *pipeline.Driver) []string {
	var out []string
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			return out
		}
		k := int32(r.Key[0])<<24 | int32(r.Key[1])<<16 | int32(r.Key[2])<<8 | int32(r.Key[3])
		out = append(out, itoa(int64(k))+" "+string(r.Value)+" @"+itoa(r.Timestamp))
	}
}

// Kafka Streams' KStreamKTableJoinTest#shouldDelayJoinByGracePeriod and
// #shouldHandleLateJoinsWithGracePeriod: a join with a grace period waits until the
// buffer's stream time is grace past a record, then joins it, in timestamp order, with the
// table's version as of its own timestamp; a record already that late joins at once.
func TestStreamTableJoinWithGracePeriod(t *testing.T) {
	atZero := func(int) int64 { return 0 }
	atIndex := func(i int) int64 { return int64(i) }

	d := storeDriver(t, graceJoinScript)
	pipeInts(t, d, "tableTopic2", "Y", 4, atZero)
	expectLines(t, intOutputs(d), nil)
	pipeInts(t, d, "streamTopic", "X", 4, atIndex)
	expectLines(t, intOutputs(d), []string{"0 X0+Y0 @0", "1 X1+Y1 @1"})
	pipeInts(t, d, "tableTopic2", "YY", 4, atZero)
	expectLines(t, intOutputs(d), nil)
	pipeInts(t, d, "streamTopic", "X", 4, atIndex)
	expectLines(t, intOutputs(d), []string{"0 X0+YY0 @0", "1 X1+YY1 @1"})
	if err := d.Pipe("streamTopic", intKey(5), []byte("test"), 7, nil); err != nil {
		t.Fatal(err)
	}
	expectLines(t, intOutputs(d), []string{"2 X2+YY2 @2", "2 X2+YY2 @2", "3 X3+YY3 @3", "3 X3+YY3 @3"})
	pipeInts(t, d, "tableTopic2", "YYY", 4, atZero)
	expectLines(t, intOutputs(d), nil)

	d = storeDriver(t, graceJoinScript)
	pipeInts(t, d, "tableTopic2", "Y", 4, atZero)
	pipeInts(t, d, "streamTopic", "X", 4, atIndex)
	expectLines(t, intOutputs(d), []string{"0 X0+Y0 @0", "1 X1+Y1 @1"})
	pipeInts(t, d, "streamTopic", "X", 1, atIndex)
	expectLines(t, intOutputs(d), []string{"0 X0+Y0 @0"})
}

// KStreamKTableJoinTest's checks: a grace period needs a versioned table, also through a
// filter, and a history retention at least as long; the buffer is the join's store
// <name>-Buffer.
func TestStreamTableJoinGracePeriodChecks(t *testing.T) {
	for _, c := range []struct{ table, want string }{
		{`b:table("topic2")`, "KTable must be versioned to use a grace period in a stream table join."},
		{`b:table("topic2", {materialized = "tableB"}):filter(function() return true end)`, "KTable must be versioned to use a grace period in a stream table join."},
		{`b:table("topic2", {materialized = {name = "tableB", type = "versionedKeyValue", historyRetention = "5m"}})`, "History retention must be at least grace period."},
		{`b:table("topic2", {materialized = {name = "V-grace", type = "versionedKeyValue", historyRetention = 0}}):filter(function() return true end)`, "History retention must be at least grace period."},
		{`b:table("topic2", {materialized = {name = "tableB", type = "versionedKeyValue", historyRetention = "5m"}}):filter(function() return true end)`, ""},
	} {
		grace := `"6ms"`
		if strings.Contains(c.table, `"5m"`) && strings.Contains(c.want, "History") {
			grace = `"6m"`
		}
		_, b, err := load(t, prelude+`b:stream("topic"):join(`+c.table+`, function(a, c) return a .. c end, {name = "first-join", gracePeriod = `+grace+`}):to("out-one")
return b`, nil)
		if c.want == "" {
			if err != nil {
				t.Fatalf("%s: %v", c.table, err)
			}
			if text := b.Describe().String(); !strings.Contains(text, "Processor: first-join (stores: [tableB, first-join-Buffer])") {
				t.Fatalf("the join lists the table's store and its buffer:\n%s", text)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.table, err, c.want)
		}
	}
}

// KIP-914 on a versioned source table: a stream record joins the version valid at its own
// timestamp; an out-of-order table update is kept in the history, shown by toStream, and
// skipped (counted) by a table-table join and by groupBy's aggregation; suppress refuses a
// versioned table.
func TestVersionedTableSemantics(t *testing.T) {
	script := prelude + `
local prices = b:table("prices", {materialized = {name = "price-history", type = "versionedKeyValue", historyRetention = "1h"}})
prices:toStream():to("changes")
b:stream("orders"):join(prices, function(o, p) return o .. "@" .. p end):to("out")
prices:join(b:table("names"), function(p, n) return n .. "=" .. p end):toStream():to("named")
prices:groupBy(function(k, v) return "all", v end):count():toStream():to("count", {valueSerde = "long"})
return b`
	sensors := newCountingSensors()
	_, b, err := load(t, script, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := pipeline.NewDriver(b, pipeline.DriverOptions{Stores: pipeline.NewMemoryStores(), ApplicationID: "app", Sensors: sensors})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []sjInput{
		{"names", "p", "apple", 0},
		{"prices", "p", "10", 10}, {"prices", "p", "20", 20}, {"prices", "p", "15", 15},
		{"orders", "p", "o1", 12}, {"orders", "p", "o2", 16}, {"orders", "p", "o3", 25}, {"orders", "p", "o0", 5},
	} {
		if err := d.Pipe(in.topic, []byte(in.key), []byte(in.value), in.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	expectLines(t, readSessions(d, "changes", asText), []string{"p 10 @10", "p 20 @20", "p 15 @15"})
	expectLines(t, readSessions(d, "out", asText), []string{"p o1@10 @12", "p o2@15 @16", "p o3@20 @25"})
	expectLines(t, readSessions(d, "named", asText), []string{"p apple=10 @10", "p apple=20 @20"})
	var counts []string
	for {
		r, ok := d.ReadOutput("count")
		if !ok {
			break
		}
		counts = append(counts, itoa(int64(r.Value[7])))
	}
	expectLines(t, counts, []string{"1", "1"}) // 20 replaces 10 in one update; 15 is out of order
	if got := sensors.dropped["out-of-order"]; got != 1 {
		t.Fatalf("out-of-order drops %d, want the table join's one", got)
	}
	_, _, err = load(t, prelude+`b:table("t", {materialized = {name = "v", type = "versionedKeyValue", historyRetention = 10}})
  :filter(function() return true end):suppress(s.Suppressed.untilTimeLimit(5, s.Suppressed.BufferConfig.unbounded()))
return b`, nil)
	if err == nil || !strings.Contains(err.Error(), "suppress() is only supported for non-versioned KTables") {
		t.Fatalf("suppress of a versioned table: %v", err)
	}
	for _, c := range []struct{ script, want string }{
		{`b:table("t", {materialized = {type = "versionedKeyValue", historyRetention = 10}})`, "a versioned table needs a store name"},
		{`b:table("t", {materialized = {name = "v", type = "versionedKeyValue"}})`, "needs historyRetention"},
		{`b:table("a"):join(b:table("b"), function(x, y) return x end, {materialized = {type = "versionedKeyValue", historyRetention = 10}})`, "join: a versioned store needs a name"},
	} {
		if _, _, err := load(t, prelude+c.script+"\nreturn b", nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.script, err)
		}
	}
}

// droppedSensors counts drops by reason and nothing else.
type droppedSensors struct{ dropped map[string]int }

type countFn func()

func (f countFn) Inc() { f() }

type noObserve struct{}

func (noObserve) Observe(float64) {}

func newCountingSensors() *droppedSensors { return &droppedSensors{dropped: map[string]int{}} }

func (s *droppedSensors) Processed(string) pipeline.Counter { return countFn(func() {}) }
func (s *droppedSensors) Dropped(_ string, r pipeline.DropReason) pipeline.Counter {
	return countFn(func() { s.dropped[r.String()]++ })
}
func (s *droppedSensors) EndToEnd(string) pipeline.Observer             { return noObserve{} }
func (s *droppedSensors) Punctuation(string) pipeline.Observer          { return noObserve{} }
func (s *droppedSensors) StoreLatency(string, string) pipeline.Observer { return noObserve{} }
func (s *droppedSensors) TaskProcessed(string) pipeline.Counter         { return countFn(func() {}) }
