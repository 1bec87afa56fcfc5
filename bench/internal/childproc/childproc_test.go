package childproc

import (
	"encoding/binary"
	"os"
	"strings"
	"testing"
)

func TestStatusMemory(t *testing.T) {
	status := "Name:\tbench\nVmPeak:\t  999 kB\nVmHWM:\t   2048 kB\nVmRSS:\t   1024 kB\nThreads:\t5\n"
	got, err := statusMemory(strings.NewReader(status))
	if err != nil {
		t.Fatal(err)
	}
	if got["VmHWM"] != 2048<<10 || got["VmRSS"] != 1024<<10 {
		t.Fatalf("got %v", got)
	}
	if _, err := statusMemory(strings.NewReader("VmRSS:\t1 kB\n")); err == nil || !strings.Contains(err.Error(), "VmHWM") {
		t.Fatalf("missing VmHWM: err = %v", err)
	}
	if _, err := statusMemory(strings.NewReader("VmHWM:\t1 MB\nVmRSS:\t1 kB\n")); err == nil {
		t.Fatal("a unit other than kB was accepted")
	}
}

func TestSelfStats(t *testing.T) {
	st, err := SelfStats()
	if err != nil {
		t.Fatal(err)
	}
	if st.RSSBytes <= 0 || st.PeakRSSBytes < st.RSSBytes || st.CPUSeconds <= 0 {
		t.Fatalf("implausible stats %+v", st)
	}
}

func TestCPUTicks(t *testing.T) {
	// A command name with a space and a parenthesis; utime 250, stime 31.
	stat := "4242 (java (x) y) S 1 4242 4242 0 -1 4194560 5000 0 0 0 250 31 0 0 20 0 40 0 100 3000000 20000\n"
	got, err := cpuTicks([]byte(stat))
	if err != nil || got != 281 {
		t.Fatalf("cpuTicks = %d, %v; want 281", got, err)
	}
	if _, err := cpuTicks([]byte("4242 (java) S 1 2")); err == nil {
		t.Fatal("a short stat line was accepted")
	}
}

func TestAuxvValue(t *testing.T) {
	var auxv []byte
	for _, w := range []uint64{6, 4096, 17, 100, 0, 0} { // AT_PAGESZ, AT_CLKTCK, AT_NULL
		auxv = binary.NativeEndian.AppendUint64(auxv, w)
	}
	if got, err := auxvValue(auxv, 8, atClkTck); err != nil || got != 100 {
		t.Fatalf("auxvValue = %d, %v; want 100", got, err)
	}
	if _, err := auxvValue(auxv[:16], 8, atClkTck); err == nil {
		t.Fatal("a vector without AT_CLKTCK was read")
	}
}

// ProcessStats of this process agrees with what it says of itself (getrusage), to the
// clock tick and the time between the two readings.
func TestProcessStatsAgreesWithSelfStats(t *testing.T) {
	self, err := SelfStats()
	if err != nil {
		t.Fatal(err)
	}
	other, err := ProcessStats(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := other.CPUSeconds - self.CPUSeconds; d < -0.05 || d > 0.5 {
		t.Errorf("CPU seconds: /proc %.3f, getrusage %.3f", other.CPUSeconds, self.CPUSeconds)
	}
	if other.PeakRSSBytes < self.PeakRSSBytes || other.RSSBytes <= 0 {
		t.Errorf("memory: /proc %+v, self %+v", other, self)
	}
	if _, err := ProcessStats(-1); err == nil {
		t.Error("a process that cannot exist was read")
	}
}
