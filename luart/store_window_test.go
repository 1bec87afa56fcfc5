package luart

import (
	"strings"
	"testing"
)

// storesScript uses every store kind from the Processor API. Stream "dump" renders what
// a store's iterators return, so the test checks iteration from inside a processor.
const storesScript = `local s = require("stoat")
local b = s.builder()
b:addStateStore{name = "win", type = "timestampedWindow", retention = "1m", windowSize = "10s", valueSerde = "long"}
b:addStateStore{name = "ses", type = "session", retention = "1m", valueSerde = "long"}
b:addStateStore{name = "ver", type = "versionedKeyValue", historyRetention = "30s"}
b:addStateStore{name = "hkv", type = "timestampedKeyValue", headers = true}
b:addStateStore{name = "hwin", type = "timestampedWindow", retention = 100, windowSize = 10, headers = true}
b:addStateStore{name = "dup", type = "window", retention = 100, windowSize = 10, retainDuplicates = true}

-- Tumbling 10 s counts per key.
b:stream("clicks"):process(function()
  local win
  return {
    init = function(ctx) win = ctx:getStateStore("win") end,
    process = function(ctx, k, v, r)
      local start = r.timestamp - r.timestamp % 10000
      local n = (win:fetch(k, start) or 0) + 1
      ctx:forward(k, tostring(win:put(k, n, start)) .. " " .. n)
    end,
  }
end, {stores = {"win"}}):to("counts")

-- Sessions with a 5 s inactivity gap, counting records.
b:stream("visits"):process(function()
  local ses
  return {
    init = function(ctx) ses = ctx:getStateStore("ses") end,
    process = function(ctx, k, v, r)
      local ts, start, stop, total = r.timestamp, r.timestamp, r.timestamp, 1
      local merged = {}
      for sk, n in ses:findSessions(k, ts - 5000, ts + 5000) do
        merged[#merged + 1] = sk
        start, stop, total = math.min(start, sk.window.start), math.max(stop, sk.window["end"]), total + n
      end
      for _, sk in ipairs(merged) do ses:remove(sk) end
      ses:put({key = k, window = {start = start, ["end"] = stop}}, total)
      ctx:forward(k, start .. "-" .. stop .. "=" .. total)
    end,
  }
end, {stores = {"ses"}}):to("sessions")

-- Versioned prices: "DEL" deletes; the output is what put/delete returned.
b:stream("prices"):process(function()
  local ver
  return {
    init = function(ctx) ver = ctx:getStateStore("ver") end,
    process = function(ctx, k, v, r)
      if v == "DEL" then
        local old, ts, validTo = ver:delete(k)
        ctx:forward(k, "deleted " .. tostring(old) .. "@" .. tostring(ts) .. " validTo " .. tostring(validTo))
      else
        ctx:forward(k, "validTo " .. tostring(ver:put(k, v)))
      end
    end,
  }
end, {stores = {"ver"}}):to("versions")

-- Headers-aware stores keep the record's headers unless put is given others.
b:stream("hdr"):process(function()
  local hkv, hwin
  return {
    init = function(ctx) hkv, hwin = ctx:getStateStore("hkv"), ctx:getStateStore("hwin") end,
    process = function(ctx, k, v, r)
      hkv:put(k, v)
      hkv:put(k .. "-own", v, 7, {own = "yes"})
      hwin:put(k, v, r.timestamp - r.timestamp % 10)
      local v1, ts1, h1 = hkv:get(k)
      local v2, ts2, h2 = hkv:get(k .. "-own")
      local v3, ts3, h3 = hwin:fetch(k, r.timestamp - r.timestamp % 10)
      local n = 0
      for wk, wv, wts, wh in hwin:all() do n = n + 1; assert(wh.src == r.headers.src) end
      for kk, kv, kts, kh in hkv:all() do n = n + 1 end
      ctx:forward(k, table.concat({v1, ts1, h1.src, v2, ts2, h2.own, tostring(h2.src), v3, ts3, h3.src, n}, " "))
    end,
  }
end, {stores = {"hkv", "hwin"}}):to("headers")

-- Duplicates: every put is kept.
b:stream("dups"):process({process = function(ctx, k, v, r)
  local dup = ctx:getStateStore("dup")
  dup:put(k, v, 0)
  local vs = {}
  for start, dv in dup:fetch(k, 0, 0) do vs[#vs + 1] = dv end
  ctx:forward(k, table.concat(vs, ","))
end}, {stores = {"dup"}}):to("dups-out")

b:stream("dump"):process({process = function(ctx, k, v, r)
  local win, ses = ctx:getStateStore("win"), ctx:getStateStore("ses")
  local out = {}
  local function wk(w) return w.key .. "[" .. w.window.start .. "," .. w.window["end"] .. ")" end
  if v == "fetch" then
    for start, n, ts in win:fetch(k, 0, 100000) do out[#out + 1] = start .. "=" .. n .. "@" .. ts end
  elseif v == "backwardFetch" then
    for start, n in win:backwardFetch(k, 0, 100000) do out[#out + 1] = start .. "=" .. n end
  elseif v == "range" then
    for w, n in win:fetch("a", "b", 0, 10000) do out[#out + 1] = wk(w) .. "=" .. n end
  elseif v == "fetchAll" then
    for w, n in win:fetchAll(10000, 20000) do out[#out + 1] = wk(w) .. "=" .. n end
  elseif v == "backwardAll" then
    for w, n in win:backwardAll() do out[#out + 1] = wk(w) .. "=" .. n end
  elseif v == "sessions" then
    for w, n in ses:fetch(k) do out[#out + 1] = wk(w) .. "=" .. n end
    for w, n in ses:backwardFindSessions("a", "z", 0, 100000) do out[#out + 1] = wk(w) .. "=" .. n end
    out[#out + 1] = tostring(ses:fetchSession(k, 1000, 4000))
  end
  ctx:forward(k, table.concat(out, " "))
end}, {stores = {"win", "ses"}}):to("dumped")
return b
`

const storesTests = `local t = require("stoat.test")

local function run(d, topic, key, value, opts)
  d:createInputTopic(topic):pipeInput(key, value, opts)
end

t.test("window store", function()
  local d = t.driver("stores.lua")
  local counts = d:createOutputTopic("counts")
  local dumped = d:createOutputTopic("dumped")
  for _, r in ipairs({{"a", 1000}, {"a", 2000}, {"b", 3000}, {"a", 12000}, {"b", 25000}}) do
    run(d, "clicks", r[1], "x", {timestamp = r[2]})
  end
  t.assertEquals(counts:readValuesToList(), {"true 1", "true 2", "true 1", "true 1", "true 1"})
  local win = d:getTimestampedWindowStore("win")
  local v, ts = win:fetch("a", 0)
  t.assertEquals({v, ts}, {2, 2000})
  t.assertNil(win:fetch("a", 20000))
  t.assertEquals(win:fetch("a", 0, 10000), {
    {key = {key = "a", window = {start = 0, ["end"] = 10000}}, value = 2, timestamp = 2000},
    {key = {key = "a", window = {start = 10000, ["end"] = 20000}}, value = 1, timestamp = 12000},
  })
  t.assertEquals(#win:all(), 4)
  t.assertEquals(#win:fetchAll(10000, 30000), 2)
  t.assertEquals(#win:fetch("a", "b", 0, 0), 2)
  for _, q in ipairs({"fetch", "backwardFetch", "range", "fetchAll", "backwardAll"}) do run(d, "dump", "a", q) end
  t.assertEquals(dumped:readValuesToList(), {
    "0=2@2000 10000=1@12000",
    "10000=1 0=2",
    "a[0,10000)=2 a[10000,20000)=1 b[0,10000)=1",
    "a[10000,20000)=1 b[20000,30000)=1",
    "b[20000,30000)=1 b[0,10000)=1 a[10000,20000)=1 a[0,10000)=2",
  })
  -- A window older than stream time (25 s) minus the retention (1 min) is dropped.
  run(d, "clicks", "a", "x", {timestamp = 90000})
  run(d, "clicks", "a", "x", {timestamp = 1000})
  t.assertEquals(counts:readValuesToList(), {"true 1", "false 1"})
  t.assertNil(win:fetch("a", 0))
end)

t.test("duplicates", function()
  local d = t.driver("stores.lua")
  local out = d:createOutputTopic("dups-out")
  run(d, "dups", "k", "1")
  run(d, "dups", "k", "2")
  t.assertEquals(out:readValuesToList(), {"1", "1,2"})
  t.assertEquals(#d:getWindowStore("dup"):all(), 2)
end)

t.test("session store", function()
  local d = t.driver("stores.lua")
  local out = d:createOutputTopic("sessions")
  for _, r in ipairs({{"a", 1000}, {"a", 4000}, {"b", 2000}, {"a", 20000}, {"a", 16000}}) do
    run(d, "visits", r[1], "v", {timestamp = r[2]})
  end
  t.assertEquals(out:readValuesToList(), {"1000-1000=1", "1000-4000=2", "2000-2000=1", "20000-20000=1", "16000-20000=2"})
  local ses = d:getSessionStore("ses")
  t.assertEquals(ses:fetch("a"), {
    {key = {key = "a", window = {start = 1000, ["end"] = 4000}}, value = 2},
    {key = {key = "a", window = {start = 16000, ["end"] = 20000}}, value = 2},
  })
  t.assertEquals(#ses:fetch("a", "b"), 3)
  t.assertEquals(ses:findSessions("b", 0, 1000), {})
  t.assertEquals(ses:fetchSession("b", 2000, 2000), 1)
  t.assertEquals(ses:fetchSession("a", 1000, 4000), 2)
  t.assertNil(ses:fetchSession("a", 1000, 20000))
  local dumped = d:createOutputTopic("dumped")
  run(d, "dump", "b", "sessions")
  t.assertEquals(dumped:readValue(), "b[2000,2000)=1 b[2000,2000)=1 a[16000,20000)=2 a[1000,4000)=2 nil")
end)

t.test("versioned store", function()
  local d = t.driver("stores.lua")
  local out = d:createOutputTopic("versions")
  run(d, "prices", "p", "10", {timestamp = 1000})
  run(d, "prices", "p", "20", {timestamp = 5000})
  run(d, "prices", "p", "15", {timestamp = 3000})
  run(d, "prices", "p", "DEL", {timestamp = 8000})
  run(d, "prices", "p", "30", {timestamp = 100000})
  run(d, "prices", "p", "99", {timestamp = 2000})
  t.assertEquals(out:readValuesToList(), {"validTo -1", "validTo -1", "validTo 5000",
    "deleted 20@5000 validTo nil", "validTo -1", "validTo nil"})
  local ver = d:getVersionedKeyValueStore("ver")
  t.assertEquals({ver:get("p")}, {"30", 100000, nil})
  t.assertNil(ver:get("p", 9000))
  t.assertNil(ver:get("p", 99999)) -- the tombstone of 8000 is valid until 100000
  t.assertEquals({ver:get("p", 100001)}, {"30", 100000})
  -- 3000 is older than stream time minus the history retention: no answer.
  t.assertNil(ver:get("p", 3000))
  t.assertNil(ver:get("q"))
end)

t.test("headers-aware stores", function()
  local d = t.driver("stores.lua")
  local out = d:createOutputTopic("headers")
  run(d, "hdr", "k", "v", {timestamp = 42, headers = {src = "s1"}})
  t.assertEquals(out:readValue(), "v 42 s1 v 7 yes nil v 42 s1 3")
end)

t.test("wrong store kind", function()
  local d = t.driver("stores.lua")
  t.assertError(function() d:getSessionStore("win") end, "state store win is a timestampedWindow store, not a session store")
  t.assertError(function() d:getKeyValueStore("ver") end, "not a key-value store")
end)
`

func TestStoreKindsThroughTheTestDriver(t *testing.T) {
	_, passed, failed, out := runLuaTests(t, map[string]string{"stores.lua": storesScript, "stores_test.lua": storesTests}, TestOptions{})
	if failed != 0 || passed != 6 {
		t.Fatalf("passed %d failed %d:\n%s", passed, failed, out)
	}
}

func TestStoreMethodErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`ctx:getStateStore("w"):fetch("k")`, "fetch takes (key, time)"},
		{`ctx:getStateStore("w"):backwardFetch("k", 1)`, "backwardFetch takes (key, from, to)"},
		{`ctx:getStateStore("s"):put({key = "k"}, "1")`, "the session key has no window"},
		{`ctx:getStateStore("s"):put("k", "1")`, "the session key must be {key = k"},
		{`ctx:getStateStore("s"):put({key = "k", window = {start = 5, ["end"] = 1}}, "1")`, "session start 5 is after its end 1"},
		{`ctx:getStateStore("s"):findSessions("k")`, "findSessions takes"},
		{`ctx:getStateStore("w").fetch()`, "call window store methods with ':'"},
	} {
		d := storeDriver(t, prelude+`
b:addStateStore{name = "w", type = "window", retention = 10, windowSize = 10}
b:addStateStore{name = "s", type = "session", retention = 10}
b:stream("in"):process({process = function(ctx, k, v) `+c.body+` end}, {stores = {"w", "s"}}):to("out")
return b`)
		err := d.Pipe("in", []byte("k"), []byte("v"), 1, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.body, err, c.want)
		}
	}
}
