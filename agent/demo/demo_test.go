package demo

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// Each feeder writes only the topics it declares, something at every tick, and the same
// records on every run.
func TestFeedersWriteTheirTopics(t *testing.T) {
	if len(Names()) == 0 {
		t.Fatal("no feeder registered")
	}
	for _, name := range Names() {
		f, err := Lookup(name, feeders[name].Topics)
		if err != nil {
			t.Fatal(err)
		}
		if f.Every <= 0 {
			t.Errorf("%s: ticks every %v", name, f.Every)
		}
		written := map[string]bool{}
		now := time.UnixMilli(1_700_000_000_000)
		for i := range 50 {
			recs := f.Tick(i, now)
			if len(recs) == 0 {
				t.Errorf("%s: tick %d writes nothing", name, i)
			}
			if !reflect.DeepEqual(recs, f.Tick(i, now)) {
				t.Errorf("%s: tick %d differs between runs", name, i)
			}
			for _, r := range recs {
				if !slices.Contains(f.Topics, r.Topic) {
					t.Errorf("%s: writes %s, not one of its topics %v", name, r.Topic, f.Topics)
				}
				if (f.ValueSchema != "") != (r.Data != nil) || (r.Data != nil) == (r.Value != nil) {
					t.Errorf("%s: tick %d: a record with Value %q and Data %v (ValueSchema %q)", name, i, r.Value, r.Data, f.ValueSchema)
				}
				written[r.Topic] = true
			}
		}
		if len(written) != len(f.Topics) {
			t.Errorf("%s: writes %v of its topics %v", name, written, f.Topics)
		}
	}
}

func TestLookupNamesWhatIsWrong(t *testing.T) {
	if _, err := Lookup("nope", nil); err == nil || !strings.Contains(err.Error(), `no demo feeder "nope" (there are: `) {
		t.Fatalf("unknown feeder: %v", err)
	}
	if _, err := Lookup("lines", []string{"orders"}); err == nil || !strings.Contains(err.Error(), "writes text-lines, which the topology does not read (it reads orders)") {
		t.Fatalf("feeder of another example: %v", err)
	}
}
