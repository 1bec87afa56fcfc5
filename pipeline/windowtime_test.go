package pipeline

import (
	"math"
	"testing"
)

// lastClosed is t − closeAfter held in the int64 range: a window is never closed by a time
// before its close offset, and with a negative offset (a join side whose before is
// negative) the latest times close everything.
func TestWindowTimeStaysInRange(t *testing.T) {
	huge := windowTime{closeAfter: math.MaxInt64}
	if got := huge.lastClosed(-2); got != math.MinInt64 || huge.closedAt(0, -2) {
		t.Errorf("closeAfter MaxInt64 at -2: lastClosed %d, window at 0 closed %v; want MinInt64, open", got, huge.closedAt(0, -2))
	}
	early := windowTime{closeAfter: -4}
	if got := early.lastClosed(math.MaxInt64 - 1); got != math.MaxInt64 {
		t.Errorf("closeAfter -4 at MaxInt64-1: lastClosed %d, want MaxInt64", got)
	}
	if got := early.lastClosed(10); got != 14 || !early.closedAt(14, 10) || early.closedAt(15, 10) {
		t.Errorf("closeAfter -4 at 10: lastClosed %d, want 14", got)
	}
}
