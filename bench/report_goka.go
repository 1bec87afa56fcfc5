package main

import (
	"fmt"
	"strings"
)

// comparison is one side-by-side row: StoatFlow's scenario against goka's.
type comparison struct{ what, ours, goka string }

var comparisons = []comparison{
	{"word count, exactly-once / goka (at-least-once)", "wordcount", "goka-wordcount"},
	{"word count at-least-once / goka", "wordcount-alos", "goka-wordcount"},
	{"word count, 1,000,000-word vocabulary, exactly-once / goka", "wordcount-1m-keys", "goka-wordcount-1m-keys"},
	{"stateless / goka's stateless re-emit", "stateless", "goka-stateless"},
}

// ratio compares scenario a's records/s with b's round by round: a round runs every
// scenario once in turn, so the i-th runs of both met the same phase of the machine.
func (rep *report) ratio(a, b string) (spread, bool) {
	ra, okA := rep.result(a)
	rb, okB := rep.result(b)
	if !okA || !okB {
		return spread{}, false
	}
	var v []float64
	for i := range min(len(ra.runs), len(rb.runs)) {
		v = append(v, ra.runs[i].recordsPerSec(rep.opts.records)/rb.runs[i].recordsPerSec(rep.opts.records))
	}
	return spreadOf(v), true
}

// cpuPerM is the median CPU s per M records of a scenario, false when it did not run.
func (rep *report) cpuPerM(name string) (float64, bool) {
	r, ok := rep.result(name)
	if !ok {
		return 0, false
	}
	return r.spreadOf(func(x runResult) float64 { return x.stats.CPUSeconds / float64(rep.opts.records) * 1e6 }).median, true
}

// gokaTable shows StoatFlow against goka, scenario by scenario.
func (rep *report) gokaTable() string {
	var b strings.Builder
	b.WriteString("| comparison | StoatFlow records/s | goka records/s | ratio (median of rounds) | CPU s per M records, StoatFlow / goka |\n")
	b.WriteString("| --- | --- | --- | --- | --- |\n")
	for _, c := range comparisons {
		ratio, ok := rep.ratio(c.ours, c.goka)
		if !ok {
			fmt.Fprintf(&b, "| %s | not measured (scenario not run or failed) | | | |\n", c.what)
			continue
		}
		ours, _ := rep.result(c.ours)
		theirs, _ := rep.result(c.goka)
		cpuOurs, _ := rep.cpuPerM(c.ours)
		cpuGoka, _ := rep.cpuPerM(c.goka)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.2f / %.2f |\n", c.what,
			fmtSpread(ours.recordsPerSec(rep.opts.records), "%s"), fmtSpread(theirs.recordsPerSec(rep.opts.records), "%s"),
			fmtSpread(ratio, "%.2f×"), cpuOurs, cpuGoka)
	}
	return b.String()
}

// gokaTargets checks the figures against the targets of issue 16.
func (rep *report) gokaTargets() []target {
	notRun := func(what string) target { return target{what, "not measured (scenario not run or failed)", "n/a"} }
	atLeast := func(what, a, b string, want float64, of string) target {
		r, ok := rep.ratio(a, b)
		if !ok {
			return notRun(what)
		}
		return target{what, fmt.Sprintf("%.2f× %s", r.median, of), verdict(r.median >= want)}
	}
	out := []target{
		atLeast("word count, exactly-once, ≥ 2.0× goka's word count", "wordcount", "goka-wordcount", 2.0, "goka"),
	}
	const cpuWhat = "word count, exactly-once, ≤ 9 CPU s per M records"
	if cpu, ok := rep.cpuPerM("wordcount"); ok {
		out = append(out, target{cpuWhat, fmt.Sprintf("%.2f", cpu), verdict(cpu <= 9)})
	} else {
		out = append(out, notRun(cpuWhat))
	}
	out = append(out,
		atLeast("word count at-least-once ≥ the exactly-once rate", "wordcount-alos", "wordcount", 1.0, "the exactly-once rate"),
		atLeast("word count, 1,000,000-word vocabulary, ≥ 1.2× goka's", "wordcount-1m-keys", "goka-wordcount-1m-keys", 1.2, "goka"),
		atLeast("word count, 1,000,000-word vocabulary, ≤ 20 % below the 10,000-word one", "wordcount-1m-keys", "wordcount", 0.8, "the 10,000-word rate"),
		atLeast("stateless ≥ 1.2× goka's stateless re-emit", "stateless", "goka-stateless", 1.2, "goka"),
		atLeast("stateless ≥ 0.8 of the raw pipe (ceiling)", "stateless", "ceiling", 0.8, "the ceiling"),
	)
	const windowWhat = "windowed: CPU per record ≤ 2× the word count's"
	w, okW := rep.cpuPerM("windowed")
	wc, okWC := rep.cpuPerM("wordcount")
	if okW && okWC && wc > 0 {
		out = append(out, target{windowWhat, fmt.Sprintf("%.1f× (%.2f / %.2f CPU s per M records)", w/wc, w, wc), verdict(w/wc <= 2)})
	} else {
		out = append(out, notRun(windowWhat))
	}
	return out
}
