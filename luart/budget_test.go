package luart

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
)

// wantBudgetError checks that err is a time-budget ScriptError naming line and record.
func wantBudgetError(t *testing.T, err error, line, record string) {
	t.Helper()
	var se *ScriptError
	if !errors.As(err, &se) || !se.Timeout {
		t.Fatalf("err = %v, want a time-budget ScriptError", err)
	}
	for _, want := range []string{line, record, "time budget"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %q, want it to name %q", err, want)
		}
	}
}

// A processor that forwards for ever is stopped: forward does not pause the budget, which
// counts what the records run into downstream, Lua callbacks included.
func TestForwardLoopIsStoppedByTheBudget(t *testing.T) {
	d := storeDriver(t, prelude+`b:stream("in")
  :process({process = function(ctx, k, v)
    repeat ctx:forward(k, v) until v ~= "loop"
  end})
  :filter(function(k, v) return v ~= "loop" end)
  :to("out")
return b`)
	start := time.Now()
	err := d.Pipe("in", []byte("k"), []byte("loop"), 1, nil)
	wantBudgetError(t, err, "pipeline.lua:5", "in-0@0")
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("took %s to stop a 200ms budget", took)
	}
	pipe(t, d, "in", "k", "fine")
	if got := outputs(d, "out"); len(got) != 1 || got[0].v != "fine" {
		t.Fatalf("out = %v", got)
	}
}

// Downstream callbacks that each stay within the budget still add up to the forwarding
// call's: 100 forwards into 50 ms each are stopped long before they end.
func TestBudgetCountsDownstreamCallbacks(t *testing.T) {
	d := storeDriver(t, prelude+`b:stream("in")
  :process({process = function(ctx, k, v)
    for i = 1, 100 do ctx:forward(k, v) end
  end})
  :mapValues(function(v)
    local start = os.clock()
    while os.clock() - start < 0.05 do end
    return v
  end)
  :to("out")
return b`)
	wantBudgetError(t, d.Pipe("in", []byte("k"), []byte("v"), 1, nil), "pipeline.lua:", "in-0@0")
}

// With one core shared with goroutines that never block, the callback's goroutine waits
// for the core for much longer than the budget in the middle of calls; only the time the
// call itself runs counts, so a callback that needs far less than its budget is not stopped.
func TestStarvedCallbackIsNotStopped(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	rt, err := New(Options{CallTimeout: 100 * time.Millisecond, Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.L.DoString(`return function(k, v) local n = 0 for i = 1, 20000 do n = n + i end return n > 0 end`); err != nil {
		t.Fatal(err)
	}
	pred := rt.predicate(rt.pop().(*lua.LFunction))
	stop := make(chan struct{})
	var spinners sync.WaitGroup
	for range 16 {
		spinners.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := 0; i < 1_000_000; i++ {
				}
			}
		})
	}
	defer func() { close(stop); spinners.Wait() }()
	rec := pipeline.Record{Key: "k", Value: "v", Topic: "in"}
	for i := range 30 {
		if keep, err := pred(rec); err != nil || !keep {
			t.Fatalf("call %d: %v, %v", i, keep, err)
		}
	}
}

// A pcall in the script catches the budget's error once, but every later instruction of
// the call raises it again.
func TestScriptPcallCannotSwallowTheBudget(t *testing.T) {
	d := driver(t, prelude+`b:stream("in"):mapValues(function(v)
  while true do pcall(function() while true do end end) end
end):to("out")
return b`)
	wantBudgetError(t, d.Pipe("in", []byte("k"), []byte("v"), 1, nil), "pipeline.lua:4", "in-")
}
