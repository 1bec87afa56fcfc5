package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procStats is what a child process reports about itself.
type procStats struct {
	CPUSeconds   float64 `json:"cpu_seconds"` // user + system, since the process started
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
	RSSBytes     int64   `json:"rss_bytes"`
	// Loop is where an agent's processing loop spent its time; nil for the ceiling.
	Loop *loopStats `json:"loop,omitempty"`
}

// loopStats are sums from the agent's own metrics.
type loopStats struct {
	ProcessSeconds float64 `json:"process_seconds"` // records through the topology, Lua included
	LuaSeconds     float64 `json:"lua_seconds"`     // inside Lua callbacks
	CommitSeconds  float64 `json:"commit_seconds"`  // commit barriers
	Commits        int64   `json:"commits"`
	// CommitP50 and CommitP99 are upper bounds of the commit latency quantiles (seconds),
	// from the histogram's buckets.
	CommitP50 float64 `json:"commit_p50"`
	CommitP99 float64 `json:"commit_p99"`
}

// selfStats reads this process's CPU time (getrusage) and its peak and current resident
// set (VmHWM, VmRSS of /proc/self/status).
func selfStats() (procStats, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return procStats{}, fmt.Errorf("getrusage: %w", err)
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return procStats{}, err
	}
	defer f.Close()
	mem, err := statusMemory(f)
	if err != nil {
		return procStats{}, fmt.Errorf("/proc/self/status: %w", err)
	}
	return procStats{CPUSeconds: cpu, PeakRSSBytes: mem["VmHWM"], RSSBytes: mem["VmRSS"]}, nil
}

// statusMemory reads the VmHWM and VmRSS lines ("VmHWM:	  123456 kB") of a status file.
func statusMemory(r io.Reader) (map[string]int64, error) {
	out := map[string]int64{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmHWM" && name != "VmRSS") {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return nil, fmt.Errorf("%s: unexpected value %q", name, rest)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = kb << 10
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, name := range []string{"VmHWM", "VmRSS"} {
		if _, ok := out[name]; !ok {
			return nil, fmt.Errorf("no %s line", name)
		}
	}
	return out, nil
}

// percentile is the nearest-rank p-th percentile (0 < p <= 100) of sorted values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}

// spread is the median, minimum and maximum of a scenario's runs.
type spread struct{ median, min, max float64 }

func spreadOf(values []float64) spread {
	if len(values) == 0 {
		return spread{}
	}
	s := slices.Clone(values)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{median: m, min: s[0], max: s[len(s)-1]}
}
