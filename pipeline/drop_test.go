package pipeline

import "testing"

// Every reason has its own label value, and the topology resolves each reason's counter once,
// when it is built: a drop looks nothing up.
func TestDropReasonsAreDistinctAndResolvedAtBuild(t *testing.T) {
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
	if sensors.resolved != len(DropReasons()) || sensors.dropped["null-key"] != 3 {
		t.Fatalf("%d counters resolved for %d reasons, %v dropped", sensors.resolved, len(DropReasons()), sensors.dropped)
	}
}

type resolvingSensors struct {
	*countingSensors
	resolved int
}

func (s *resolvingSensors) Dropped(r DropReason) Counter {
	s.resolved++
	return s.countingSensors.Dropped(r)
}
