package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// microResult is one line of `go test -bench -benchmem` output.
type microResult struct {
	pkg         string
	name        string // without the -GOMAXPROCS suffix
	nsPerOp     float64
	bytesPerOp  float64
	allocsPerOp float64
	mem         bool // B/op and allocs/op were reported
}

// parseMicro reads `go test -bench` output: "pkg:" lines name the package of the result
// lines after them; other lines are ignored.
func parseMicro(r io.Reader) ([]microResult, error) {
	var out []microResult
	pkg := ""
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || len(f)%2 != 0 {
			continue // a benchmark's name printed before its own output
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		m := microResult{pkg: pkg, name: name}
		seen := false
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s %s: %w", n, f[i], f[i+1], err)
			}
			switch f[i+1] {
			case "ns/op":
				m.nsPerOp, seen = v, true
			case "B/op":
				m.bytesPerOp, m.mem = v, true
			case "allocs/op":
				m.allocsPerOp = v
			}
		}
		if !seen {
			return nil, fmt.Errorf("line %d: no ns/op: %q", n, line)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

func findMicro(results []microResult, name string) (microResult, bool) {
	for _, m := range results {
		if m.name == name {
			return m, true
		}
	}
	return microResult{}, false
}
