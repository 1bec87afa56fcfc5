package luart

import (
	"strings"
	"testing"
)

// KIP-914: an aggregation materialized in a versioned store keeps each result as a version
// (at max(record ts, previous result ts)); a stream-table join against the aggregate reads
// the version valid at the stream record's time. Windowed aggregations take window stores:
// a versioned one is refused, and so is a versioned store without a name.
func TestVersionedAggregation(t *testing.T) {
	d := storeDriver(t, prelude+`
local totals = b:stream("payments"):groupByKey()
  :reduce(function(a, v) return tostring(tonumber(a) + tonumber(v)) end,
    {materialized = {name = "totals", type = "versionedKeyValue", historyRetention = "1h"}})
totals:toStream():to("totals-out")
b:stream("lookups"):join(totals, function(l, total) return l .. "=" .. total end):to("joined")
local counts = b:table("t"):groupBy(function(k, v) return v, v end)
  :count({materialized = {name = "counts", type = "versionedKeyValue", historyRetention = "1h"}})
counts:toStream():to("counts-out", {valueSerde = "long"})
return b`)
	for _, in := range []sjInput{
		{"payments", "acct", "5", 10}, {"payments", "acct", "7", 20},
		{"lookups", "acct", "at15", 15}, {"lookups", "acct", "at25", 25}, {"lookups", "acct", "at5", 5},
		{"t", "a", "x", 1}, {"t", "b", "x", 2},
	} {
		if err := d.Pipe(in.topic, []byte(in.key), []byte(in.value), in.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	expectLines(t, readSessions(d, "totals-out", asText), []string{"acct 5 @10", "acct 12 @20"})
	expectLines(t, readSessions(d, "joined", asText), []string{"acct at15=5 @15", "acct at25=12 @25"})
	if got := d.Pending("counts-out"); got != 2 {
		t.Fatalf("%d table-aggregation results, want 2", got)
	}
	vs, err := d.VersionedStore("totals", 0)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok, err := vs.GetAsOf("acct", 15); err != nil || !ok || r.Value != "5" {
		t.Fatalf("totals as of 15: %+v %v %v, want the version 5 kept in the history", r, ok, err)
	}

	for script, want := range map[string]string{
		`b:stream("s"):groupByKey():windowedBy(s.TimeWindows.ofSizeWithNoGrace(10)):count({materialized = {name = "w", type = "versionedKeyValue", historyRetention = 5}})`: "a versioned key-value store does not apply there",
		`b:globalTable("g", {materialized = {name = "g", type = "versionedKeyValue", historyRetention = 5}})`:                                                               "a global table cannot be versioned, as in Kafka Streams",
		`b:stream("s"):groupByKey():count({materialized = {type = "versionedKeyValue", historyRetention = 5}})`:                                                             "a versioned store needs a name",
	} {
		_, _, err := load(t, prelude+script+"\nreturn b", nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", script, err, want)
		}
	}
}

// KIP-914: a table join materialized in a versioned store keeps a result older than the
// key's latest in the history and forwards it marked out of order (KTableKTableJoinMerger);
// a stream-table join against the result reads the version valid at its time.
func TestVersionedTableJoinResult(t *testing.T) {
	d := storeDriver(t, prelude+`
local ab = b:table("a"):join(b:table("b"), function(x, y) return x .. y end,
  {materialized = {name = "ab", type = "versionedKeyValue", historyRetention = "1h"}})
ab:toStream():to("ab-out")
b:stream("lookups"):join(ab, function(l, v) return l .. "=" .. v end):to("joined")
return b`)
	for _, in := range []sjInput{
		{"a", "k", "a1", 10}, {"b", "k", "b1", 20}, {"a", "k", "a2", 15}, {"b", "k", "b0", 5},
		{"lookups", "k", "at17", 17}, {"lookups", "k", "at25", 25},
	} {
		if err := d.Pipe(in.topic, []byte(in.key), []byte(in.value), in.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	expectLines(t, readSessions(d, "ab-out", asText), []string{"k a1b1 @20", "k a2b1 @20", "k a2b0 @15"})
	expectLines(t, readSessions(d, "joined", asText), []string{"k at17=a2b0 @17", "k at25=a2b1 @25"})
}

// A foreign-key join's result materialized in a versioned store, as its KTableSource keeps
// it: a result older than the key's latest stays in the history, forwarded marked out of
// order.
func TestVersionedForeignKeyJoinResult(t *testing.T) {
	d := storeDriver(t, prelude+`
b:table("orders"):join(b:table("customers"), function(v) return v end, function(o, c) return o .. ":" .. c end,
  {materialized = {name = "oc", type = "versionedKeyValue", historyRetention = "1h"}})
  :toStream():to("oc-out")
return b`)
	for _, in := range []sjInput{{"customers", "c", "C", 1}, {"orders", "o", "c", 20}, {"orders", "o", "c", 5}} {
		if err := d.Pipe(in.topic, []byte(in.key), []byte(in.value), in.ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	expectLines(t, readSessions(d, "oc-out", asText), []string{"o c:C @20", "o c:C @5"})
	vs, err := d.VersionedStore("oc", 0)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok, err := vs.GetAsOf("o", 10); err != nil || !ok || r.Timestamp != 5 {
		t.Fatalf("oc as of 10: %+v %v %v, want the version at 5 kept in the history", r, ok, err)
	}
}
