package pipeline

import (
	"fmt"
	"strings"
	"testing"
)

// fkOf takes the foreign key before the "/" of a value; "/x" has none.
func fkOf(rec Record) (any, error) {
	fk, _, _ := strings.Cut(rec.Value.(string), "/")
	if fk == "" {
		return nil, nil
	}
	return fk, nil
}

// runFKJoin pipes the same inputs through an inner or left foreign-key join and returns
// what the result's stream wrote.
func runFKJoin(t *testing.T, left bool) []string {
	t.Helper()
	d := tableJoinDriver(t, 1, func(l, r *KTable) (*KTable, error) {
		return l.JoinForeignKey(r, fkOf, joinedPairs, left, "", Materialized{})
	})
	var got []string
	pipe := func(topic, k, v string, ts int64) {
		t.Helper()
		var vb []byte
		if v != "" {
			vb = []byte(v)
		}
		if err := d.topo.Process(&SourceRecord{Topic: topic, Timestamp: ts, Key: []byte(k), Value: vb}); err != nil {
			t.Fatal(err)
		}
		var step []string
		for {
			r, ok := d.ReadOutput("out")
			if !ok {
				break
			}
			step = append(step, fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Timestamp))
		}
		got = append(got, fmt.Sprintf("%d:%s", ts, strings.Join(step, ",")))
	}
	pipe("l", "k1", "a/1", 1)  // left insert, no right row yet
	pipe("r", "a", "A", 2)     // right insert
	pipe("l", "k2", "a/2", 3)  // left insert with a match
	pipe("r", "a", "A2", 4)    // right update fans out to k1 and k2
	pipe("l", "k1", "a/1b", 5) // left update, same foreign key
	pipe("l", "k1", "b/1", 6)  // foreign key changes to one without a match
	pipe("r", "b", "B", 7)     // the new foreign key's row arrives
	pipe("r", "a", "A3", 8)    // k1 left a: only k2
	pipe("r", "a", "", 9)      // right delete
	pipe("l", "k2", "", 10)    // left delete
	pipe("l", "k1", "/1", 11)  // foreign key becomes null
	pipe("r", "b", "B2", 12)   // k1 no longer references b
	return got
}

func TestForeignKeyInnerJoin(t *testing.T) {
	got := runFKJoin(t, false)
	want := []string{
		"1:",
		"2:k1=k1|a/1|A@2",
		"3:k2=k2|a/2|A@3",
		"4:k1=k1|a/1|A2@4,k2=k2|a/2|A2@4",
		"5:k1=k1|a/1b|A2@5",
		"6:k1=@6",
		"7:k1=k1|b/1|B@7",
		"8:k2=k2|a/2|A3@8",
		"9:k2=@9",
		"10:k2=@10",
		"11:k1=@11",
		"12:",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A left join answers every instruction Kafka Streams sends: a changed foreign key yields
// the answer of the old key's delete (no match) and then the new key's.
func TestForeignKeyLeftJoin(t *testing.T) {
	got := runFKJoin(t, true)
	want := []string{
		"1:k1=k1|a/1|<nil>@1",
		"2:k1=k1|a/1|A@2",
		"3:k2=k2|a/2|A@3",
		"4:k1=k1|a/1|A2@4,k2=k2|a/2|A2@4",
		"5:k1=k1|a/1b|A2@5",
		"6:k1=k1|b/1|<nil>@6,k1=k1|b/1|<nil>@6",
		"7:k1=k1|b/1|B@7",
		"8:k2=k2|a/2|A3@8",
		"9:k2=k2|a/2|<nil>@9",
		"10:k2=@10,k2=@10",
		"11:k1=k1|/1|<nil>@11,k1=k1|/1|<nil>@11",
		"12:",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Subscriptions of one foreign key must not match a longer key sharing its bytes.
func TestForeignKeySubscriptionsOfAPrefixKey(t *testing.T) {
	if k := subscriptionKey([]byte("ab"), []byte("c")); strings.HasPrefix(string(k), string(subscriptionPrefix([]byte("a")))) {
		t.Fatalf("key %q matches the prefix of foreign key a", k)
	}
}

func TestForeignKeyJoinNames(t *testing.T) {
	b := newTestBuilder()
	tables := testTables(t, b, "l", "r")
	j, err := tables[0].JoinForeignKey(tables[1], fkOf, joinedPairs, false, "", Materialized{Given: true})
	if err != nil {
		t.Fatal(err)
	}
	if j.Node().Name != "KTABLE-FK-JOIN-OUTPUT-0000000009" || j.StoreName() != "KTABLE-FK-JOIN-OUTPUT-STATE-STORE-0000000010" {
		t.Fatalf("got node %s, store %s", j.Node().Name, j.StoreName())
	}
	if _, ok := b.stores["KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000007"]; !ok {
		t.Fatalf("no subscription store among %v", b.Stores())
	}
	named, err := tables[0].JoinForeignKey(tables[1], fkOf, joinedPairs, true, "orders", Materialized{})
	if err != nil {
		t.Fatal(err)
	}
	if named.Node().Name != "orders" || b.stores["orders-subscription-store"] == nil {
		t.Fatalf("got node %s, stores %v", named.Node().Name, b.Stores())
	}
}

// The tables need not be co-partitioned: the right row is looked up, and subscribed to, in
// the partition Kafka Streams would send the subscription to.
func TestForeignKeyJoinReadsTheForeignKeysPartition(t *testing.T) {
	d := tableJoinDriver(t, 4, func(l, r *KTable) (*KTable, error) {
		return l.JoinForeignKey(r, fkOf, joinedPairs, false, "", Materialized{})
	})
	fkPart := DefaultPartition([]byte("a"), 4)
	leftPart := (fkPart + 1) % 4
	for _, in := range []SourceRecord{
		{Topic: "r", Partition: fkPart, Timestamp: 1, Key: []byte("a"), Value: []byte("A")},
		{Topic: "l", Partition: leftPart, Timestamp: 2, Key: []byte("k"), Value: []byte("a/1")},
		{Topic: "r", Partition: fkPart, Timestamp: 3, Key: []byte("a"), Value: []byte("A2")},
	} {
		if err := d.topo.Process(&in); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			break
		}
		got = append(got, fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Timestamp))
	}
	if want := "k=k|a/1|A@2 k=k|a/1|A2@3"; strings.Join(got, " ") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}
