package childproc

import (
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
