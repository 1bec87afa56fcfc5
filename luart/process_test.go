package luart

import (
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

func storeDriver(t *testing.T, script string) *pipeline.Driver {
	t.Helper()
	_, b, err := load(t, script, nil)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	d, err := pipeline.NewDriver(b, pipeline.DriverOptions{Stores: pipeline.NewMemoryStores(), ApplicationID: "app"})
	if err != nil {
		t.Fatalf("driver: %v", err)
	}
	return d
}

const dedupScript = prelude + `
b:addStateStore{name = "seen", type = "timestampedKeyValue", valueSerde = "long"}
b:stream("in"):process(function()
  local store
  return {
    init = function(ctx) store = ctx:getStateStore("seen") end,
    process = function(ctx, k, v, r)
      local n, ts = store:get(k)
      store:put(k, (n or 0) + 1)
      if n == nil then ctx:forward(k, v .. "@" .. ctx:taskId()) end
    end,
  }
end, {stores = {"seen"}, name = "dedup"}):to("out")
return b`

func TestProcessWithStoreDeduplicates(t *testing.T) {
	d := storeDriver(t, dedupScript)
	for _, kv := range []kv{{"a", "1"}, {"b", "2"}, {"a", "3"}} {
		pipe(t, d, "in", kv.k, kv.v)
	}
	got := outputs(d, "out")
	if len(got) != 2 || got[0] != (kv{"a", "1@0_0"}) || got[1] != (kv{"b", "2@0_0"}) {
		t.Fatalf("out = %v", got)
	}
	s, err := d.Store("seen", 0)
	if err != nil {
		t.Fatal(err)
	}
	v, ts, found, err := s.Get("a")
	if err != nil || !found || v.(int64) != 2 || ts != 1000 {
		t.Fatalf("seen[a] = %v %d %v %v", v, ts, found, err)
	}
}

func TestStoreRangeAndPunctuation(t *testing.T) {
	d := storeDriver(t, prelude+`
b:addStateStore{name = "buf", valueSerde = "string"}
b:stream("in"):process({
  init = function(ctx)
    local store = ctx:getStateStore("buf")
    ctx:schedule("1s", "wall-clock", function(ts)
      local parts = {}
      for k, v in store:range("a", "c") do parts[#parts + 1] = k .. "=" .. v end
      ctx:forward("flush", table.concat(parts, ","), {timestamp = ts})
    end)
    ctx:schedule(100, "stream-time", function(ts) ctx:forward("st", tostring(ts)) end)
  end,
  process = function(ctx, k, v) ctx:getStateStore("buf"):put(k, v) end,
}, {stores = {"buf"}}):to("out")
return b`)
	for _, kv := range []kv{{"b", "2"}, {"a", "1"}, {"d", "4"}} {
		pipe(t, d, "in", kv.k, kv.v)
	}
	// The stream-time punctuator fires on the first record of the task (time 1000) only.
	if got := outputs(d, "out"); len(got) != 1 || got[0] != (kv{"st", "1000"}) {
		t.Fatalf("out = %v", got)
	}
	if err := d.AdvanceWallClock(999); err != nil {
		t.Fatal(err)
	}
	if d.Pending("out") != 0 {
		t.Fatal("the wall-clock punctuator fired early")
	}
	if err := d.AdvanceWallClock(1); err != nil {
		t.Fatal(err)
	}
	if got := outputs(d, "out"); len(got) != 1 || got[0] != (kv{"flush", "a=1,b=2"}) {
		t.Fatalf("out = %v", got)
	}
}

func TestProcessValuesKeepsKeyAndUnconnectedStoreIsRefused(t *testing.T) {
	d := storeDriver(t, prelude+`
b:addStateStore{name = "s"}
b:stream("in"):processValues({process = function(ctx, k, v) ctx:forward(v .. "!") end}):to("out")
b:stream("in2"):process({process = function(ctx, k, v) ctx:getStateStore("s") end}):to("out")
return b`)
	pipe(t, d, "in", "k", "v")
	if got := outputs(d, "out"); len(got) != 1 || got[0] != (kv{"k", "v!"}) {
		t.Fatalf("out = %v", got)
	}
	err := d.Pipe("in2", []byte("k"), []byte("v"), 1, nil)
	if err == nil || !strings.Contains(err.Error(), "not connected to the processor") {
		t.Fatalf("err = %v", err)
	}
}

func TestProcessDeclarationErrors(t *testing.T) {
	for _, c := range []struct{ code, want string }{
		{`b:stream("in"):process({process = function() end}, {stores = {"nope"}})`, `state store "nope", which is not declared`},
		{`b:addStateStore{name = "w", type = "window"}`, `addStateStore "w": a window store needs retention and windowSize`},
		{`b:addStateStore{name = "w", type = "window", retention = "1s", windowSize = "2s"}`, "must be no smaller than the window size"},
		{`b:addStateStore{name = "s", type = "session", windowSize = 5, retention = 10}`, "windowSize does not apply to session stores"},
		{`b:addStateStore{name = "v", type = "versionedKeyValue"}`, "needs historyRetention"},
		{`b:addStateStore{name = "k", headers = true}`, "headers-aware stores (KIP-1271) are timestampedKeyValue or timestampedWindow"},
		{`b:addStateStore{name = "s", type = "session", retention = 10, retainDuplicates = true}`, "retainDuplicates applies to window stores only"},
		{`b:addStateStore{name = "w", type = "window", retention = "soon", windowSize = 1}`, "retention: invalid duration"},
		{`b:addStateStore{name = "x", type = "list"}`, `unknown type "list"`},
		{`b:stream("in"):process(42)`, "process needs a processor table"},
	} {
		_, _, err := load(t, prelude+c.code+"\nreturn b", nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "pipeline.lua:3") {
			t.Fatalf("%s: err = %v", c.code, err)
		}
	}
}
