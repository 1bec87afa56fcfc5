package luart

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
)

// memoryDriver runs script with a small memory budget.
func memoryDriver(t *testing.T, limit int64, script string) *pipeline.Driver {
	t.Helper()
	_, b, err := loadWith(t, Options{CallTimeout: 5 * time.Second, MemoryLimit: limit}, script, nil)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	d, err := pipeline.NewDriver(b, pipeline.DriverOptions{})
	if err != nil {
		t.Fatalf("driver: %v", err)
	}
	return d
}

// wantMemoryError checks that err is a memory-budget ScriptError naming what and where.
func wantMemoryError(t *testing.T, err error, wants ...string) {
	t.Helper()
	var se *ScriptError
	if !errors.As(err, &se) || !se.Memory {
		t.Fatalf("err = %v, want a memory-budget ScriptError", err)
	}
	for _, want := range append(wants, "agent.lua.memory.max.bytes") {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %q, want it to name %q", err, want)
		}
	}
}

// What one library call (or one `..`) would build beyond the budget is refused before it is
// built, as an error of the callback at the script line; the runtime goes on.
func TestOneShotAllocationIsRefused(t *testing.T) {
	for _, c := range []struct{ name, code, what string }{
		{"string.rep", `return string.rep("x", 2^40)`, "string.rep would build 1.0 TiB"},
		{"rep method", `return ("ab"):rep(2^39)`, "string.rep would build 1.0 TiB"},
		{"table.concat", `local t, s = {}, string.rep("x", 2^20) for i = 1, 64 do t[i] = s end return table.concat(t)`, "table.concat would build 64.0 MiB"},
		{"doubling", `local s = "x" while true do s = s .. s end`, ".. would build 8.0 MiB"},
		{"format", `return string.format(string.rep("%999999s", 10), "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")`, "string.format would build"},
		{"gsub", `local s = string.rep("x", 2^20) return (s:gsub("x", s))`, "string.gsub would build"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := memoryDriver(t, 8<<20, prelude+`b:stream("in"):mapValues(function(v)
  if v == "big" then `+c.code+` end
  return v
end):to("out")
return b`)
			wantMemoryError(t, d.Pipe("in", []byte("k"), []byte("big"), 1, nil), "pipeline.lua:4", "in-0@0", c.what)
			if err := d.Pipe("in", []byte("k"), []byte("fine"), 1, nil); err != nil {
				t.Fatalf("the record after: %v", err)
			}
			if got := outputs(d, "out"); len(got) != 1 || got[0].v != "fine" {
				t.Fatalf("out = %v", got)
			}
		})
	}
}

// Data that grows a little with every record, in a global or in a table the callback holds
// as an upvalue, is found at a checkpoint once it takes more than the budget: the record then
// fails, and so does every record after it while the data stays over the budget.
func TestGrowingDataIsStopped(t *testing.T) {
	const limit = 2 << 20
	for _, c := range []struct{ name, decl, table string }{
		{"global", "seen = {}", "seen"},
		{"upvalue", "local kept = {}", "kept"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := memoryDriver(t, limit, prelude+c.decl+`
b:stream("in"):mapValues(function(v)
  `+c.table+`[#`+c.table+` + 1] = {v}
  return v
end):to("out")
return b`)
			// An entry takes about 130 bytes: 16 k records fill the budget.
			const most = 200_000
			var err error
			n := 0
			for ; n < most && err == nil; n++ {
				err = d.Pipe("in", []byte("k"), []byte("a value"), 1, nil)
			}
			if n == most {
				t.Fatalf("%d records grew the data to about %d MiB and none failed", most, most*130>>20)
			}
			t.Logf("failed after %d records", n)
			// The checkpoint that finds the data over the budget falls on whichever line of
			// the callback was running: the insert (5) or the return (6).
			wantMemoryError(t, err, "in-0@", "the scripts' Lua data take more than")
			if !strings.Contains(err.Error(), "pipeline.lua:5") && !strings.Contains(err.Error(), "pipeline.lua:6") {
				t.Fatalf("err = %q, want it to name a line of the callback (pipeline.lua:5 or :6)", err)
			}
			if n < limit/200 {
				t.Fatalf("failed after %d records, before the data could fill the budget", n)
			}
			wantMemoryError(t, d.Pipe("in", []byte("k"), []byte("next"), 1, nil), "pipeline.lua:")
		})
	}
}

// A gsub whose result outgrows the budget a little at a time is refused before its buffer
// grows past the budget: what it allocated stays within about twice the budget (the
// buffer, and the smaller ones it outgrew), where telling the result's length after each
// write let a doubling buffer and its predecessors take four times the budget.
func TestGrowingGsubAllocatesWithinTheBudget(t *testing.T) {
	const limit = 8 << 20
	d := memoryDriver(t, limit, prelude+`local s = string.rep("x", 2^18)
b:stream("in"):mapValues(function(v)
  return (s:gsub("x", "`+strings.Repeat("y", 64)+`"))
end):to("out")
return b`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err := d.Pipe("in", []byte("k"), []byte("v"), 1, nil)
	runtime.ReadMemStats(&after)
	wantMemoryError(t, err, "pipeline.lua:5", "string.gsub would build")
	if got := after.TotalAlloc - before.TotalAlloc; got > 5*limit/2 {
		t.Fatalf("the refused gsub allocated %d MiB, more than 2.5 times the %d MiB budget", got>>20, limit>>20)
	}
}
