package conformance

import (
	"fmt"
	"reflect"
	"testing"
)

// TestRepartitionTopicsMatchInMemory runs every case on a few seeds twice through StoatFlow's
// engine: with the re-keyed records routed in memory (classic mode's single active agent),
// and written to their internal topics in Kafka Streams' bytes and read back, as the agents of
// a streams group run them. Both give the same records and stores, so the encodings of the
// repartition, registration and response topics carry everything the in-memory route did.
// It needs no Java: go test ./conformance/ runs it.
func TestRepartitionTopicsMatchInMemory(t *testing.T) {
	seeds := int64(envInt(t, "CONFORMANCE_SEEDS", 10))
	memory := Engine{CaseDir: "cases"}
	topics := Engine{CaseDir: "cases", RepartitionTopics: true}
	compared := 0
	for _, c := range Cases {
		for seed := int64(1); seed <= seeds; seed++ {
			if c.Fixed != nil && seed > 1 {
				break
			}
			in := Generate(c, seed)
			want, got := memory.run(c, in), topics.run(c, in)
			compared++
			if err := sameRun(want, got); err != nil {
				t.Errorf("case %s seed %d: %v", c.Name, seed, err)
				break
			}
		}
	}
	t.Logf("%d runs compared", compared)
	if compared == 0 {
		t.Fatal("no case ran")
	}
}

// sameRun compares two runs of one input: what each step output, where it failed, and the
// stores.
func sameRun(want, got *Result) error {
	switch {
	case want.Fatal != got.Fatal:
		return fmt.Errorf("fatal: in memory %q, through topics %q", want.Fatal, got.Fatal)
	case want.ErrorStep != got.ErrorStep:
		return fmt.Errorf("error at step %d (%s) in memory, at step %d (%s) through topics", want.ErrorStep, want.Error, got.ErrorStep, got.Error)
	}
	for step, w := range want.Outputs {
		if g := got.Outputs[step]; !reflect.DeepEqual(w, g) {
			return fmt.Errorf("step %d: in memory %v, through topics %v", step, w, g)
		}
	}
	for step, g := range got.Outputs {
		if _, ok := want.Outputs[step]; !ok {
			return fmt.Errorf("step %d: through topics only %v", step, g)
		}
	}
	if !reflect.DeepEqual(want.Stores, got.Stores) {
		return fmt.Errorf("stores differ: in memory %v, through topics %v", want.Stores, got.Stores)
	}
	return nil
}
