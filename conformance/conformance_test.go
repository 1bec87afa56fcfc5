package conformance

import (
	"os"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestConformance runs every case on CONFORMANCE_SEEDS seeds (default 50) through Kafka
// Streams' TopologyTestDriver and through StoatFlow and compares the two. make conformance
// builds the Java side and runs it; elsewhere (go test ./...) it is skipped.
// CONFORMANCE_CASES (a regexp) picks cases, CONFORMANCE_SEED runs one seed only,
// CONFORMANCE_STRICT=1 fails on the known defects too.
func TestConformance(t *testing.T) {
	if os.Getenv("CONFORMANCE") == "" {
		t.Skip("make conformance runs this suite: it needs the Java side built (conformance/java)")
	}
	seeds := envInt(t, "CONFORMANCE_SEEDS", 50)
	first := int64(1)
	if s := os.Getenv("CONFORMANCE_SEED"); s != "" {
		first, seeds = int64(envInt(t, "CONFORMANCE_SEED", 0)), 1
	}
	pick := regexp.MustCompile(os.Getenv("CONFORMANCE_CASES"))
	strict := os.Getenv("CONFORMANCE_STRICT") != ""
	var ins []Input
	byName := map[string]*Case{}
	for _, c := range Cases {
		byName[c.Name] = c
		if !pick.MatchString(c.Name) {
			continue
		}
		n := seeds
		if c.Fixed != nil {
			n = 1
		}
		for seed := first; seed < first+int64(n); seed++ {
			ins = append(ins, Generate(c, seed))
		}
	}
	start := time.Now()
	workers := runtime.GOMAXPROCS(0)
	wait, err := JVM{JavaDir: "java", Threads: workers}.Start(t.TempDir(), ins)
	if err != nil {
		t.Fatal(err)
	}
	ours := make([]*Result, len(ins))
	var wg sync.WaitGroup
	next := make(chan int)
	eng := Engine{CaseDir: "cases", Threads: envInt(t, "CONFORMANCE_THREADS", 1)}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				ours[i] = eng.Run(byName[ins[i].Case], ins[i])
			}
		}()
	}
	for i := range ins {
		next <- i
	}
	close(next)
	wg.Wait()
	goTime := time.Since(start)
	java, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs: StoatFlow %v, both sides %v", len(ins), goTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if len(java) != len(ins) {
		t.Fatalf("the Java side returned %d results for %d runs", len(java), len(ins))
	}
	failed := map[string]int{}
	for i, in := range ins {
		c := byName[in.Case]
		if java[i].Case != in.Case || java[i].Seed != in.Seed {
			t.Fatalf("result %d is of %s seed %d, not of %s seed %d", i, java[i].Case, java[i].Seed, in.Case, in.Seed)
		}
		if err := Compare(c, in, java[i], ours[i]); err != nil {
			// The first failing seed of a case says what differs; the others are counted.
			if failed[c.Name]++; failed[c.Name] == 1 {
				report := t.Errorf
				if c.Defect != "" && !strict {
					report = t.Logf
				}
				report("%v\n(rerun: make conformance CONFORMANCE_CASES='^%s$' CONFORMANCE_SEED=%d)", err, c.Name, in.Seed)
			}
		}
	}
	ran := map[string]bool{}
	for _, in := range ins {
		ran[in.Case] = true
	}
	for _, c := range Cases {
		switch n := failed[c.Name]; {
		case !ran[c.Name]:
		case c.Defect != "" && n == 0 && seeds >= 50:
			t.Errorf("case %s passes: remove its known defect (%s)", c.Name, c.Defect)
		case c.Defect != "" && !strict:
			t.Logf("case %s: known defect on %d seeds: %s", c.Name, n, c.Defect)
		case n > 1:
			t.Errorf("case %s failed on %d seeds", c.Name, n)
		}
	}
}

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, s)
	}
	return n
}
