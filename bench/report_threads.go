package main

import "fmt"

// threadTargets checks the figures against the targets of issue 30: what a second worker
// (num.stream.threads = 2) gives, and the targets carried over from issue 16.
func (rep *report) threadTargets() []target {
	notRun := func(what string) target { return target{what, "not measured (scenario not run or failed)", "n/a"} }
	var out []target
	const luaWhat = "Lua-heavy stateless at 2 threads ≥ 1.7× its 1-thread rate"
	if r, ok := rep.ratio("lua-heavy-2t", "lua-heavy"); ok {
		out = append(out, target{luaWhat, fmt.Sprintf("%.2f×", r.median), verdict(r.median >= 1.7)})
	} else {
		out = append(out, notRun(luaWhat))
	}
	cpuRatio := func(what, a, b string, limit float64) target {
		x, okA := rep.cpuPerM(a)
		y, okB := rep.cpuPerM(b)
		if !okA || !okB || y == 0 {
			return notRun(what)
		}
		return target{what, fmt.Sprintf("%.2f× (%.2f / %.2f CPU s per M records)", x/y, x, y), verdict(x/y <= limit)}
	}
	out = append(out,
		cpuRatio("word count, exactly-once, at 2 threads: CPU per record ≤ 1.1× 1 thread's", "wordcount-2t", "wordcount", 1.1),
		cpuRatio("word count, exactly-once: CPU per record ≤ 2× the raw pipe's (ceiling)", "wordcount", "ceiling", 2),
	)
	return out
}
