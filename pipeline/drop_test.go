package pipeline

import "testing"

// Every reason has its own label value, and a node resolves each reason's counter once, at its
// first drop for it: later drops look nothing up.
func TestDropReasonsAreDistinctAndResolvedOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range DropReasons() {
		if name := r.String(); name == "" || seen[name] {
			t.Errorf("reason %d: label %q is empty or repeated", r, name)
		}
		seen[r.String()] = true
	}
	sensors := &resolvingSensors{countingSensors: newCountingSensors()}
	b := newTestBuilder()
	s, err := b.Stream([]string{"in"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := groupedByKey(t, s).Count(Materialized{}, int64Serde{}, ""); err != nil {
		t.Fatal(err)
	}
	d, err := NewDriver(b, DriverOptions{Sensors: sensors, Stores: NewMemoryStores()})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := d.Pipe("in", nil, []byte("v"), 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if sensors.resolved != 1 || sensors.dropped["null-key"] != 3 || sensors.dropped["KSTREAM-AGGREGATE-0000000002/null-key"] != 3 {
		t.Fatalf("%d counters resolved for 3 drops of one node and reason, %v dropped", sensors.resolved, sensors.dropped)
	}
}

type resolvingSensors struct {
	*countingSensors
	resolved int
}

func (s *resolvingSensors) Dropped(node string, r DropReason) Counter {
	s.resolved++
	return s.countingSensors.Dropped(node, r)
}
