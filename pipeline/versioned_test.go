package pipeline

import (
	"strings"
	"testing"
)

// KIP-914 with Go records: a versioned source table keeps out-of-order updates in its
// history and marks them; a stream-table join reads the version valid at the stream
// record's time, and with a grace period waits for the buffer's stream time to pass it.
func TestVersionedTableJoinReadsAsOfTheRecord(t *testing.T) {
	b := newTestBuilder()
	prices, err := b.Table("prices", Consumed{}, Materialized{StoreName: "h", Versioned: true, HistoryRetention: 100})
	if err != nil {
		t.Fatal(err)
	}
	var outOfOrder []bool
	watch, err := b.addNode(&Node{Name: "watch", Kind: ProcessorNode, factory: func() Processor { return &recordOrder{seen: &outOfOrder} }})
	if err != nil {
		t.Fatal(err)
	}
	prices.node.addChild(watch)
	orders, _ := b.Stream([]string{"orders"}, Consumed{})
	joiner := func(rec Record, v any) (any, error) { return rec.Value.(string) + "@" + v.(string), nil }
	j, err := orders.Join(prices, joiner, Joined{Name: "j", HasGracePeriod: true, GracePeriod: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.To("out", Produced{}); err != nil {
		t.Fatal(err)
	}
	d, err := NewDriver(b, DriverOptions{Stores: NewMemoryStores()})
	if err != nil {
		t.Fatal(err)
	}
	pipe := func(topic, k, v string, ts int64) {
		t.Helper()
		if err := d.Pipe(topic, []byte(k), []byte(v), ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	pipe("prices", "p", "10", 10)
	pipe("prices", "p", "20", 20)
	pipe("orders", "p", "o1", 12) // buffered: its table version may still change
	pipe("prices", "p", "11", 11) // late, within history: o1 will see it
	pipe("orders", "p", "o2", 16) // buffer time 16: o1 (12 <= 13) joins now
	pipe("orders", "p", "o0", 1)  // 1 < 16 - 3: joins at once, before any version
	pipe("orders", "p", "o3", 30)
	if got, want := strings.Join(outputs(d), " "), "p=o1@11 p=o2@11"; got != want {
		t.Fatalf("join output %q, want %q", got, want)
	}
	if len(outOfOrder) != 3 || outOfOrder[0] || outOfOrder[1] || !outOfOrder[2] {
		t.Fatalf("out of order flags %v, want false false true", outOfOrder)
	}
}

// recordOrder notes each update's OutOfOrder flag.
type recordOrder struct{ seen *[]bool }

func (p *recordOrder) Init(*Context) error { return nil }
func (p *recordOrder) Process(rec Record) error {
	*p.seen = append(*p.seen, rec.Value.(Change).OutOfOrder)
	return nil
}
