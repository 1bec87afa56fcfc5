package agent

import (
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
)

// Every reason of the dropped-records metric, the engine's and the exception handlers', is a
// series at zero as soon as the agent exists, before any record, so that an alert on a
// reason's rate works from the start; the metric's help names each engine reason.
func TestEveryDropReasonExistsAtZero(t *testing.T) {
	m := metrics.New()
	if _, err := New(config.Default(), Options{Metrics: m}); err != nil {
		t.Fatal(err)
	}
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{metrics.DropDeserialization, metrics.DropProcessing, metrics.DropProduction, metrics.DropDeadLetter}
	for _, r := range pipeline.DropReasons() {
		want = append(want, r.String())
	}
	for _, fam := range families {
		if fam.GetName() != "stoatflow_processor_records_dropped_total" {
			continue
		}
		got := map[string]float64{}
		for _, s := range fam.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "reason" {
					got[l.GetValue()] = s.GetCounter().GetValue()
				}
			}
		}
		for _, reason := range want {
			if v, ok := got[reason]; !ok || v != 0 {
				t.Errorf("reason %q: present %v, value %v; want a series at 0", reason, ok, v)
			}
		}
		if len(got) != len(want) {
			t.Errorf("series %v, want exactly %v", got, want)
		}
		for _, r := range pipeline.DropReasons() {
			if !strings.Contains(fam.GetHelp(), r.String()) {
				t.Errorf("the help does not name the reason %s: %q", r, fam.GetHelp())
			}
		}
		return
	}
	t.Fatal("stoatflow_processor_records_dropped_total is not in the registry")
}
