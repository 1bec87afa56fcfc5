package pipeline

import (
	"fmt"
	"strings"
	"testing"
)

// keyedJoinDriver joins clicks re-keyed by value with the table users, on partitions
// partitions each, while another source has 5: the repartition must land where the
// table's key lives, the co-partitioned topics' count, not the largest source count.
func keyedJoinDriver(t *testing.T, left bool, usersPartitions int32) (*Driver, *countingSensors, error) {
	return joinDriver(t, true, left, usersPartitions)
}

func joinDriver(t *testing.T, rekey, left bool, usersPartitions int32) (*Driver, *countingSensors, error) {
	t.Helper()
	b := newTestBuilder()
	users, err := b.Table("users", Consumed{}, Materialized{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stream([]string{"other"}, Consumed{}); err != nil {
		t.Fatal(err)
	}
	clicks, err := b.Stream([]string{"clicks"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	byUser := clicks
	if rekey {
		byUser, err = clicks.SelectKey(func(rec Record) (any, error) {
			if fmt.Sprint(rec.Value) == "anonymous" {
				return nil, nil
			}
			return rec.Value, nil
		}, "")
		if err != nil {
			t.Fatal(err)
		}
	}
	joiner := func(rec Record, u any) (any, error) { return fmt.Sprintf("%s|%s", rec.Value, u), nil }
	join := byUser.Join
	if left {
		join = byUser.LeftJoin
	}
	j, err := join(users, joiner, Joined{})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	sensors := newCountingSensors()
	d, err := NewDriver(b, DriverOptions{Partitions: map[string]int32{"users": usersPartitions, "clicks": 3, "other": 5},
		Sensors: sensors, Stores: NewMemoryStores(), ApplicationID: "app"})
	return d, sensors, err
}

func processAt(t *testing.T, d *Driver, topic string, partition int32, k, v string, ts int64) {
	t.Helper()
	var kb []byte
	if k != "" {
		kb = []byte(k)
	}
	if err := d.topo.Process(&SourceRecord{Topic: topic, Partition: partition, Timestamp: ts, Key: kb, Value: []byte(v)}); err != nil {
		t.Fatal(err)
	}
}

// A stream-table join after a key change repartitions the stream (KStreamImpl#join's
// repartitionForJoin) into the table's partition of the new key: the co-partitioned
// topics' partition count (CopartitionedTopicsEnforcer), not the largest source count.
func TestStreamTableJoinAfterKeyChangeFindsTheTablesPartition(t *testing.T) {
	d, sensors, err := keyedJoinDriver(t, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"u1", "u2", "u3"} {
		processAt(t, d, "users", DefaultPartition([]byte(u), 3), u, "name-"+u, 1)
	}
	processAt(t, d, "clicks", 0, "c1", "u1", 5)
	processAt(t, d, "clicks", 1, "c2", "u2", 6)
	processAt(t, d, "clicks", 2, "c3", "u3", 7)
	processAt(t, d, "clicks", 2, "c4", "anonymous", 8)
	if got, want := strings.Join(outputs(d), " "), "u1=u1|name-u1 u2=u2|name-u2 u3=u3|name-u3"; got != want {
		t.Fatalf("join output %q, want %q", got, want)
	}
	// The inner join's repartition filter drops the null key, as Kafka Streams' does.
	if sensors.dropped["null-key"] != 1 {
		t.Fatalf("drops %v, want one null key", sensors.dropped)
	}
}

// A left join relaxes null keys (NULL_KEY_RELAXED_JOIN): the repartition passes a null key
// and the join joins it with nil (KIP-962).
func TestStreamTableLeftJoinAfterKeyChangeKeepsNullKeys(t *testing.T) {
	d, sensors, err := keyedJoinDriver(t, true, 3)
	if err != nil {
		t.Fatal(err)
	}
	processAt(t, d, "clicks", 2, "c4", "anonymous", 8)
	if got, want := strings.Join(outputs(d), " "), "<nil>=anonymous|%!s(<nil>)"; got != want {
		t.Fatalf("join output %q, want %q", got, want)
	}
	if len(sensors.dropped) != 0 {
		t.Fatalf("drops %v, want none", sensors.dropped)
	}
}

// Joined source topics must have one partition count (CopartitionedTopicsEnforcer); a
// re-keyed stream's repartition takes the table's count instead.
func TestJoinOfTopicsNotCoPartitionedIsRefused(t *testing.T) {
	_, _, err := joinDriver(t, false, false, 4)
	want := "Invalid topology: Topics not co-partitioned: [{clicks=3, users=4}]"
	if err == nil || err.Error() != want {
		t.Fatalf("err %v, want %q", err, want)
	}
	d, _, err := keyedJoinDriver(t, false, 4)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.topo.repartitionPartitions["KSTREAM-KEY-SELECT-0000000005-repartition"]; got != 4 {
		t.Fatalf("repartition partitions %v, want the table's 4", d.topo.repartitionPartitions)
	}
}

// A repartition with its own partition count must match the topics it is joined with; a
// join of two repartitions takes their largest count, and two fixed counts must agree.
func TestJoinOfRepartitionedStreamsChecksPartitionCounts(t *testing.T) {
	build := func(leftParts, rightParts int32, table bool) error {
		b := newTestBuilder()
		l, _ := b.Stream([]string{"l"}, Consumed{})
		r, _ := b.Stream([]string{"r"}, Consumed{})
		lr, err := l.Repartition(Repartitioned{Name: "lr", NumPartitions: leftParts})
		if err != nil {
			t.Fatal(err)
		}
		joiner := func(rec Record, _, _ any) (any, error) { return rec.Value, nil }
		if table {
			users, _ := b.Table("users", Consumed{}, Materialized{})
			_, err = lr.Join(users, func(rec Record, _ any) (any, error) { return rec.Value, nil }, Joined{})
		} else {
			rr, err2 := r.Repartition(Repartitioned{Name: "rr", NumPartitions: rightParts})
			if err2 != nil {
				t.Fatal(err2)
			}
			_, err = lr.JoinStream(rr, InnerStreamJoin, joiner, JoinWindows{Before: 1, After: 1}, StreamJoined{})
		}
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewDriver(b, DriverOptions{Partitions: map[string]int32{"l": 2, "r": 2, "users": 3}, Stores: NewMemoryStores()})
		return err
	}
	for _, c := range []struct {
		left, right int32
		table       bool
		want        string
	}{
		{4, 0, true, "Invalid topology: Number of partitions [4] of repartition topic [lr-repartition] doesn't match number of partitions [3] of the source topic."},
		{0, 0, true, ""},
		{3, 0, true, ""},
		{4, 5, false, "Invalid topology: Following topics do not have the same number of partitions: [{lr-repartition=4, rr-repartition=5}]"},
		{4, 4, false, ""},
		{0, 4, false, ""},
	} {
		err := build(c.left, c.right, c.table)
		if (c.want == "" && err != nil) || (c.want != "" && (err == nil || err.Error() != c.want)) {
			t.Errorf("%+v: err %v", c, err)
		}
	}
}

// A stream-stream join after a key change repartitions the re-keyed side to the other
// side's partitions; a left join relaxes null keys, so a null key from the re-keyed left
// side passes its repartition and is joined with nil at once (KIP-962).
func TestStreamStreamJoinAfterKeyChange(t *testing.T) {
	for _, kind := range []StreamJoinKind{InnerStreamJoin, LeftStreamJoin} {
		b := newTestBuilder()
		l, _ := b.Stream([]string{"l"}, Consumed{})
		r, _ := b.Stream([]string{"r"}, Consumed{})
		lk, err := l.SelectKey(func(rec Record) (any, error) {
			if fmt.Sprint(rec.Value) == "none" {
				return nil, nil
			}
			return rec.Value, nil
		}, "")
		if err != nil {
			t.Fatal(err)
		}
		joiner := func(rec Record, lv, rv any) (any, error) { return fmt.Sprintf("%v+%v", lv, rv), nil }
		j, err := lk.JoinStream(r, kind, joiner, JoinWindows{Before: 10, After: 10}, StreamJoined{})
		if err != nil {
			t.Fatal(err)
		}
		if err := j.To("out", Produced{}); err != nil {
			t.Fatal(err)
		}
		sensors := newCountingSensors()
		d, err := NewDriver(b, DriverOptions{Partitions: map[string]int32{"l": 2, "r": 3}, Sensors: sensors, Stores: NewMemoryStores()})
		if err != nil {
			t.Fatal(err)
		}
		processAt(t, d, "r", DefaultPartition([]byte("k7"), 3), "k7", "R", 1)
		processAt(t, d, "l", 1, "x", "k7", 2)
		processAt(t, d, "l", 0, "y", "none", 3)
		want, drops := "k7=k7+R", 1
		if kind == LeftStreamJoin {
			want, drops = "k7=k7+R <nil>=none+<nil>", 0
		}
		if got := strings.Join(outputs(d), " "); got != want || sensors.dropped["null-key"] != drops {
			t.Errorf("%v: output %q, drops %v; want %q and %d null key", kind, got, sensors.dropped, want, drops)
		}
	}
}

// Table-table joins need co-partitioned inputs too.
func TestTableJoinOfTopicsNotCoPartitionedIsRefused(t *testing.T) {
	b := newTestBuilder()
	tables := testTables(t, b, "l", "r")
	if _, err := tables[0].JoinTable(tables[1], joinedPairs, InnerTableJoin, "", Materialized{}); err != nil {
		t.Fatal(err)
	}
	_, err := NewDriver(b, DriverOptions{Partitions: map[string]int32{"l": 2, "r": 1}, Stores: NewMemoryStores()})
	if want := "Invalid topology: Topics not co-partitioned: [{l=2, r=1}]"; err == nil || err.Error() != want {
		t.Fatalf("err %v, want %q", err, want)
	}
}
