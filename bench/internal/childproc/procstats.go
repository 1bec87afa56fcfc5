package childproc

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// ProcessStats reads another process's stats from /proc: its CPU time (utime + stime of
// /proc/<pid>/stat: every thread's, those that ended included) and its peak and current
// resident set (VmHWM, VmRSS of /proc/<pid>/status). These are the counters SelfStats reads
// through getrusage and /proc/self/status, so a process measured from outside (a JVM, which
// does not speak for itself) compares with one that reports on itself. CPU time comes in
// clock ticks (10 ms at the usual 100 per second).
func ProcessStats(pid int) (Stats, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stats{}, err
	}
	ticks, err := cpuTicks(b)
	if err != nil {
		return Stats{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	hz, err := clockTicksPerSecond()
	if err != nil {
		return Stats{}, err
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Stats{}, err
	}
	defer f.Close()
	mem, err := statusMemory(f)
	if err != nil {
		return Stats{}, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return Stats{CPUSeconds: float64(ticks) / float64(hz), PeakRSSBytes: mem["VmHWM"], RSSBytes: mem["VmRSS"]}, nil
}

// cpuTicks is utime + stime of a /proc/<pid>/stat line, fields 14 and 15. The command name,
// field 2, is in parentheses and may hold spaces and parentheses itself: the fields are
// counted from the last ')'.
func cpuTicks(stat []byte) (int64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	// After the name: state (field 3), ppid (4), ... utime (14), stime (15).
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	var sum int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time %q: %w", s, err)
		}
		sum += n
	}
	return sum, nil
}

// clockTicksPerSecond is the unit of /proc's CPU times (sysconf(_SC_CLK_TCK)), which the
// kernel hands every process in its auxiliary vector as AT_CLKTCK.
var clockTicksPerSecond = sync.OnceValues(func() (int64, error) {
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 0, err
	}
	return auxvValue(b, strconv.IntSize/8, atClkTck)
})

const atClkTck = 17 // AT_CLKTCK of <elf.h>

// auxvValue finds key in an auxiliary vector of (key, value) pairs of words of size bytes, in
// this machine's byte order.
func auxvValue(auxv []byte, size int, key uint64) (int64, error) {
	word := func(b []byte) uint64 {
		if size == 4 {
			return uint64(binary.NativeEndian.Uint32(b))
		}
		return binary.NativeEndian.Uint64(b)
	}
	for i := 0; i+2*size <= len(auxv); i += 2 * size {
		if k := word(auxv[i:]); k == key {
			if v := word(auxv[i+size:]); v > 0 {
				return int64(v), nil
			}
			break
		}
	}
	return 0, fmt.Errorf("the auxiliary vector has no AT_CLKTCK")
}
