package main

import (
	"strings"
	"testing"
	"time"
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
	st, err := selfStats()
	if err != nil {
		t.Fatal(err)
	}
	if st.RSSBytes <= 0 || st.PeakRSSBytes < st.RSSBytes || st.CPUSeconds <= 0 {
		t.Fatalf("implausible stats %+v", st)
	}
}

func TestPercentileNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 200; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 100 * time.Millisecond}, {99, 198 * time.Millisecond}, {100, 200 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := percentile(d, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile of nothing = %v", got)
	}
}

func TestSpreadOf(t *testing.T) {
	if s := spreadOf([]float64{3, 1, 2}); s != (spread{median: 2, min: 1, max: 3}) {
		t.Errorf("odd: %+v", s)
	}
	if s := spreadOf([]float64{4, 1, 2, 3}); s != (spread{median: 2.5, min: 1, max: 4}) {
		t.Errorf("even: %+v", s)
	}
}
