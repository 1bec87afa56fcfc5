package conformance

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"strings"
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

// TestRepartitionTopicsMatchKafka compares, step by step, the records StoatFlow writes to
// the repartition and foreign-key join topics when it writes them (a streams group's agents)
// with those Kafka Streams 4.4 writes in TopologyTestDriver: topic, key and value bytes (a
// KTable groupBy's Change values in ChangedSerializer's layout), timestamp and headers, in
// the order each topic received them. Every case with such a topic runs; make conformance
// runs it with the Java side built.
func TestRepartitionTopicsMatchKafka(t *testing.T) {
	if os.Getenv("CONFORMANCE") == "" {
		t.Skip("make conformance runs this test: it needs the Java side built (conformance/java)")
	}
	seeds := int64(envInt(t, "CONFORMANCE_SEEDS", 10))
	pick := regexp.MustCompile(os.Getenv("CONFORMANCE_CASES"))
	topics := Engine{CaseDir: "cases", RepartitionTopics: true, TaskTime: true}
	var ins []Input
	var ours []*Result
	for _, c := range Cases {
		if !pick.MatchString(c.Name) {
			continue
		}
		for seed := int64(1); seed <= seeds && (c.Fixed == nil || seed == 1); seed++ {
			in := Generate(c, seed)
			res := topics.Run(c, in)
			// Only topologies with internal topics go to the JVM.
			if !strings.Contains(res.Describe, "-repartition") && !strings.Contains(res.Describe, "-topic") {
				break
			}
			ins, ours = append(ins, in), append(ours, res)
		}
	}
	wait, err := JVM{JavaDir: "java", Threads: runtime.GOMAXPROCS(0)}.Start(t.TempDir(), ins)
	if err != nil {
		t.Fatal(err)
	}
	java, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	compared := map[string]int{}
	for i, in := range ins {
		j, o := java[i], ours[i]
		if j.Fatal != "" || o.Fatal != "" || len(j.Internal) == 0 && len(o.Internal) == 0 {
			continue
		}
		compared[in.Case]++
		if err := sameInternal(in, j, o); err != nil {
			t.Errorf("case %s seed %d: %v\n(rerun: make conformance CONFORMANCE_CASES='^%s$' CONFORMANCE_SEEDS=%d)", in.Case, in.Seed, err, in.Case, in.Seed)
		}
	}
	t.Logf("runs compared, by case: %v", compared)
	for _, name := range []string{"table_groupby_count", "table_groupby_reduce", "table_groupby_aggregate"} {
		if pick.MatchString(name) && compared[name] == 0 {
			t.Errorf("case %s wrote no repartition record", name)
		}
	}
}

// sameInternal compares the internal topics' records of each step up to the first failing
// one.
func sameInternal(in Input, java, ours *Result) error {
	last := len(in.Steps) - 1
	for _, e := range []int{java.ErrorStep, ours.ErrorStep} {
		if e >= 0 && e < last {
			last = e
		}
	}
	for i := 0; i <= last; i++ {
		j, o := java.Internal[i], ours.Internal[i]
		for k := 0; k < max(len(j), len(o)); k++ {
			if k < len(j) && k < len(o) && sameRecord(j[k], o[k]) {
				continue
			}
			return fmt.Errorf("step %d (%s), internal record %d differs:\n  Kafka Streams: %s\n  StoatFlow:     %s",
				i, fmtStep(in.Steps[i]), k, fmtRecordAt(j, k), fmtRecordAt(o, k))
		}
	}
	return nil
}
