package pipeline

import (
	"strings"
	"testing"
)

func TestSlidingWindowsValidate(t *testing.T) {
	for _, c := range []struct {
		w    SlidingWindows
		want string
	}{
		{SlidingWindows{TimeDifference: -1}, "time difference must not be negative"},
		{SlidingWindows{TimeDifference: 1, Grace: -1}, "grace period must not be negative"},
		{SlidingWindows{TimeDifference: 0}, ""},
		{SlidingWindows{TimeDifference: 10, Grace: 5}, ""},
	} {
		err := c.w.Validate()
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.w, err, c.want)
		}
	}
}

// The store keeps windows for grace + 2d (Kafka's SlidingWindowStoreMaterializer default),
// and the table's key serde reads a window end as start + d.
func TestSlidingWindowsStoreAndKeySerde(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	g, _ := s.GroupByKey(Grouped{})
	sw, err := g.WindowedBySliding(SlidingWindows{TimeDifference: 10, Grace: 3})
	if err != nil {
		t.Fatal(err)
	}
	table, err := sw.Count(Materialized{}, int64Serde{}, "")
	if err != nil {
		t.Fatal(err)
	}
	spec := b.stores[table.StoreName()]
	if spec.Type != TimestampedWindowStoreType || spec.Retention != 23 || spec.WindowSize != 10 {
		t.Fatalf("store %+v", spec)
	}
	if ks, ok := table.serdes.Key.(TimeWindowedSerde); !ok || ks.Size != 10 {
		t.Fatalf("key serde %#v", table.serdes.Key)
	}
	if got := names(b); got != "KSTREAM-SOURCE-0000000000 KSTREAM-AGGREGATE-0000000002" {
		t.Fatalf("names %s", got)
	}
}
