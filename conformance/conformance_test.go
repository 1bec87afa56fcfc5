package conformance

import (
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConformance runs every case on CONFORMANCE_SEEDS seeds (default 50) through Kafka
// Streams' TopologyTestDriver and through StoatFlow and compares the two. make conformance
// builds the Java side and runs it; elsewhere (go test ./...) it is skipped.
// CONFORMANCE_CASES (a regexp) picks cases, CONFORMANCE_SEED runs one seed only,
// CONFORMANCE_STRICT=1 fails on the known defects too. CONFORMANCE_THREADS lists the
// num.stream.threads StoatFlow's side runs each input with (default 1; make conformance:
// 1,2,4), each run compared with the one run of Kafka Streams. CONFORMANCE_TIME lists the
// time modes StoatFlow's side runs in, each at every thread count: "watermark" (the global
// watermark, classic mode's; the default) and "task" (each task's own time, streams mode's,
// Kafka Streams' rule: compared without the differences that come from the watermark).
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
	var engines []Engine
	for _, taskTime := range envTimes(t) {
		for _, n := range envInts(t, "CONFORMANCE_THREADS", []int{1}) {
			engines = append(engines, Engine{CaseDir: "cases", Threads: n, TaskTime: taskTime})
		}
	}
	ours := make([][]*Result, len(engines)) // by engine, then input
	var wg sync.WaitGroup
	next := make(chan [2]int)
	for i := range engines {
		ours[i] = make([]*Result, len(ins))
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range next {
				th, i := job[0], job[1]
				ours[th][i] = engines[th].Run(byName[ins[i].Case], ins[i])
			}
		}()
	}
	for th := range engines {
		for i := range ins {
			next <- [2]int{th, i}
		}
	}
	close(next)
	wg.Wait()
	goTime := time.Since(start)
	java, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d inputs, StoatFlow in %d runs each (thread counts times time modes): StoatFlow %v, both sides %v", len(ins), len(engines), goTime.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if len(java) != len(ins) {
		t.Fatalf("the Java side returned %d results for %d runs", len(java), len(ins))
	}
	failed := map[string]int{}
	for i, in := range ins {
		c := byName[in.Case]
		if java[i].Case != in.Case || java[i].Seed != in.Seed {
			t.Fatalf("result %d is of %s seed %d, not of %s seed %d", i, java[i].Case, java[i].Seed, in.Case, in.Seed)
		}
		for th, e := range engines {
			// Compare may rewrite parts of both sides (documented differences): each run
			// of StoatFlow's is compared with a copy of Kafka Streams' result.
			if err := Compare(c, in, java[i].clone(), ours[th][i]); err != nil {
				// The first failing seed of a case says what differs; the others are counted.
				if failed[c.Name]++; failed[c.Name] == 1 {
					report := t.Errorf
					if c.Defect != "" && !strict {
						report = t.Logf
					}
					report("%d thread(s), %s time: %v\n(rerun: make conformance CONFORMANCE_CASES='^%s$' CONFORMANCE_SEED=%d CONFORMANCE_THREADS=%d CONFORMANCE_TIME=%s)",
						e.Threads, timeMode(e.TaskTime), err, c.Name, in.Seed, e.Threads, timeMode(e.TaskTime))
				}
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
			t.Logf("case %s: known defect in %d runs (seeds times engines): %s", c.Name, n, c.Defect)
		case n > 1:
			t.Errorf("case %s failed in %d runs (seeds times engines)", c.Name, n)
		}
	}
}

// envTimes reads CONFORMANCE_TIME: for each time mode listed, whether it is task time.
func envTimes(t *testing.T) []bool {
	s := os.Getenv("CONFORMANCE_TIME")
	if s == "" {
		return []bool{false}
	}
	var out []bool
	for _, f := range strings.Split(s, ",") {
		switch strings.TrimSpace(f) {
		case "watermark":
			out = append(out, false)
		case "task":
			out = append(out, true)
		default:
			t.Fatalf("CONFORMANCE_TIME=%q: want watermark, task, or both separated by a comma", s)
		}
	}
	return out
}

// timeMode names a time mode as CONFORMANCE_TIME does.
func timeMode(taskTime bool) string {
	if taskTime {
		return "task"
	}
	return "watermark"
}

// envInts reads a comma-separated list of positive integers.
func envInts(t *testing.T, name string, def []int) []int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want positive integers separated by commas", name, s)
		}
		out = append(out, n)
	}
	return out
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
