package luart

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
)

// load writes script into a temp dir as pipeline.lua (plus extra files) and loads it.
func load(t *testing.T, script string, extra map[string]string) (*Runtime, *pipeline.StreamsBuilder, error) {
	t.Helper()
	return loadWith(t, Options{CallTimeout: 200 * time.Millisecond}, script, extra)
}

// loadWith is load into a runtime with opts.
func loadWith(t *testing.T, opts Options, script string, extra map[string]string) (*Runtime, *pipeline.StreamsBuilder, error) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range extra {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "pipeline.lua")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.Stdout = &strings.Builder{}
	rt, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	b, err := rt.LoadScripts([]string{path})
	return rt, b, err
}

func driver(t *testing.T, script string) *pipeline.Driver {
	t.Helper()
	_, b, err := load(t, script, nil)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	d, err := pipeline.NewDriver(b, pipeline.DriverOptions{Partitions: map[string]int32{"out": 4, "in": 4}})
	if err != nil {
		t.Fatalf("driver: %v", err)
	}
	return d
}

type kv struct{ k, v string }

func outputs(d *pipeline.Driver, topic string) []kv {
	var out []kv
	for {
		r, ok := d.ReadOutput(topic)
		if !ok {
			return out
		}
		out = append(out, kv{string(r.Key), string(r.Value)})
	}
}

func pipe(t *testing.T, d *pipeline.Driver, topic, k, v string) {
	t.Helper()
	var kb []byte
	if k != "" {
		kb = []byte(k)
	}
	if err := d.Pipe(topic, kb, []byte(v), 1000, nil); err != nil {
		t.Fatalf("pipe %s=%s: %v", k, v, err)
	}
}

func TestOperators(t *testing.T) {
	cases := []struct {
		name string
		body string // the chain after `b:stream("in")`
		in   []kv
		want []kv
	}{
		{"filter", `:filter(function(k, v) return #v > 2 end):to("out")`,
			[]kv{{"a", "xy"}, {"b", "xyz"}}, []kv{{"b", "xyz"}}},
		{"filterNot", `:filterNot(function(k, v) return #v > 2 end):to("out")`,
			[]kv{{"a", "xy"}, {"b", "xyz"}}, []kv{{"a", "xy"}}},
		{"map", `:map(function(k, v) return v, k end):to("out")`,
			[]kv{{"a", "x"}}, []kv{{"x", "a"}}},
		{"mapValues", `:mapValues(function(v) return v:upper() end):to("out")`,
			[]kv{{"a", "x"}}, []kv{{"a", "X"}}},
		{"mapValues withKey", `:mapValues(function(k, v) return k .. v end, {withKey = true}):to("out")`,
			[]kv{{"a", "x"}}, []kv{{"a", "ax"}}},
		{"selectKey", `:selectKey(function(k, v) return v .. "!" end):to("out")`,
			[]kv{{"a", "x"}}, []kv{{"x!", "x"}}},
		{"flatMap", `:flatMap(function(k, v) return {{k .. 1, v}, {k .. 2, v}} end):to("out")`,
			[]kv{{"a", "x"}}, []kv{{"a1", "x"}, {"a2", "x"}}},
		{"flatMapValues", `:flatMapValues(function(v) local t = {} for w in v:gmatch("%a+") do t[#t+1] = w end return t end):to("out")`,
			[]kv{{"a", "hello big world"}}, []kv{{"a", "hello"}, {"a", "big"}, {"a", "world"}}},
		{"peek", `:peek(function(k, v) seen = (seen or 0) + 1 end):mapValues(function(v) return tostring(seen) end):to("out")`,
			[]kv{{"a", "x"}, {"b", "y"}}, []kv{{"a", "1"}, {"b", "2"}}},
		{"record context", `:mapValues(function(v, r) return r.topic .. "/" .. r.partition .. "/" .. r.offset .. "/" .. r.timestamp end):to("out")`,
			[]kv{{"a", "x"}, {"b", "y"}}, []kv{{"a", "in/0/0/1000"}, {"b", "in/0/1/1000"}}},
		{"topic extractor", `:to(function(k, v) return "out" end)`,
			[]kv{{"a", "x"}}, []kv{{"a", "x"}}},
		{"repartition", `:repartition({numberOfPartitions = 4}):mapValues(function(v, r) return tostring(r.partition) end):to("out")`,
			[]kv{{"abc", "x"}, {"hello", "y"}}, []kv{{"abc", "3"}, {"hello", "1"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := driver(t, `local s = require("stoat"); local b = s.builder(); b:stream("in")`+c.body+"\nreturn b")
			for _, r := range c.in {
				pipe(t, d, "in", r.k, r.v)
			}
			got := outputs(d, "out")
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestSplitMergeAndBranchNames(t *testing.T) {
	d := driver(t, `
local s = require("stoat")
local b = s.builder()
local branches = b:stream("in")
  :split({name = "route-"})
  :branch(function(k, v) return v == "a" end, {name = "a"})
  :branch(function(k, v) return v == "b" end)
  :defaultBranch()
branches["route-a"]:mapValues(function(v) return "A" end):merge(branches["route-2"]):to("out")
branches["route-0"]:to("rest")
return b`)
	for _, v := range []string{"a", "b", "c"} {
		pipe(t, d, "in", "k", v)
	}
	if got := outputs(d, "out"); len(got) != 2 || got[0].v != "A" || got[1].v != "b" {
		t.Fatalf("out = %v", got)
	}
	if got := outputs(d, "rest"); len(got) != 1 || got[0].v != "c" {
		t.Fatalf("rest = %v", got)
	}
}

func TestSerdesLongAndJSON(t *testing.T) {
	d := driver(t, `
local s = require("stoat")
local b = s.builder()
b:stream("in", {valueSerde = "json"})
  :mapValues(function(v) return v.n * 2 end)
  :to("out", {valueSerde = "long"})
return b`)
	if err := d.Pipe("in", []byte("k"), []byte(`{"n": 21}`), 5, nil); err != nil {
		t.Fatal(err)
	}
	r, ok := d.ReadOutput("out")
	if !ok || len(r.Value) != 8 || binary.BigEndian.Uint64(r.Value) != 42 {
		t.Fatalf("out = %v %x", ok, r.Value)
	}
}

func TestJSONNullAndEmptyArrayRoundTrip(t *testing.T) {
	d := driver(t, `
local s = require("stoat")
local b = s.builder()
b:stream("in", {valueSerde = "json"}):mapValues(function(v)
  assert(v.a == s.null, "null must arrive as stoat.null")
  v.seen = true
  return v
end):to("out", {valueSerde = "json"})
return b`)
	if err := d.Pipe("in", []byte("k"), []byte(`{"a":null,"e":[],"o":{}}`), 5, nil); err != nil {
		t.Fatal(err)
	}
	r, _ := d.ReadOutput("out")
	if got := string(r.Value); got != `{"a":null,"e":[],"o":{},"seen":true}` {
		t.Fatalf("value = %s", got)
	}
}

func TestHeadersCarriedAndVisible(t *testing.T) {
	d := driver(t, `
local s = require("stoat")
local b = s.builder()
b:stream("in"):mapValues(function(v, r)
  local all = r.headers:all()
  return r.headers["trace"] .. ":" .. #all .. ":" .. all[1].value
end):to("out")
return b`)
	h := pipeline.Headers{{Key: "trace", Value: []byte("first")}, {Key: "trace", Value: []byte("last")}}
	if err := d.Pipe("in", []byte("k"), []byte("v"), 5, h); err != nil {
		t.Fatal(err)
	}
	r, _ := d.ReadOutput("out")
	if string(r.Value) != "last:2:first" {
		t.Fatalf("value = %s", r.Value)
	}
	if len(r.Headers) != 2 || string(r.Headers[1].Value) != "last" {
		t.Fatalf("headers not carried to the output: %v", r.Headers)
	}
}

// Headers a script hands back as the runtime gave them (r.headers, a headers-aware store's
// get) keep their full list, repeated names and order included; a table the script changed
// gives its own contents.
func TestHeadersTableRoundTripKeepsTheList(t *testing.T) {
	_, b, err := load(t, `
local s = require("stoat")
local b = s.builder()
b:addStateStore{name = "last", type = "timestampedKeyValue", headers = true}
b:stream("in"):process(function()
  local last
  return {
    init = function(ctx) last = ctx:getStateStore("last") end,
    process = function(ctx, k, v, r)
      local pv, pts, phs = last:get(k)
      last:put(k, v)
      if pv == nil then
        ctx:forward(k, "as received", {headers = r.headers})
        return
      end
      if v == "change" then phs.extra = "1" end
      ctx:forward(k, pv, {timestamp = pts, headers = phs})
    end,
  }
end, {stores = {"last"}}):to("out")
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := pipeline.NewDriver(b, pipeline.DriverOptions{Stores: pipeline.NewMemoryStores(), ApplicationID: "app"})
	if err != nil {
		t.Fatal(err)
	}
	h := pipeline.Headers{{Key: "h", Value: []byte("x")}, {Key: "trace", Value: nil}, {Key: "h", Value: []byte("y")}}
	for i, v := range []string{"first", "change", "keep"} {
		if err := d.Pipe("in", []byte("k"), []byte(v), int64(10+i), h); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for r, ok := d.ReadOutput("out"); ok; r, ok = d.ReadOutput("out") {
		var hs []string
		for _, hd := range r.Headers {
			v := "null"
			if hd.Value != nil {
				v = string(hd.Value)
			}
			hs = append(hs, hd.Key+"="+v)
		}
		if slices.Contains(hs, "extra=1") {
			slices.Sort(hs) // a changed table's order is the table's
		}
		got = append(got, fmt.Sprintf("%s@%d[%s]", r.Value, r.Timestamp, strings.Join(hs, " ")))
	}
	want := []string{
		"as received@10[h=x trace=null h=y]", // r.headers
		"first@10[extra=1 h=y trace=null]",   // the store's get, changed
		"change@11[h=x trace=null h=y]",      // the store's get
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestPartitioner(t *testing.T) {
	d := driver(t, `
local s = require("stoat")
local b = s.builder()
b:stream("in"):to("out", {partitioner = function(topic, key, value, headers, n)
  if value == "all" then local t = {} for p = 0, n - 1 do t[#t+1] = p end return t end
  if value == "none" then return {} end
  if value == "default" then return nil end
  return 2
end})
return b`)
	for _, v := range []string{"two", "all", "none", "default"} {
		pipe(t, d, "in", "abc", v)
	}
	var parts []int32
	for {
		r, ok := d.ReadOutput("out")
		if !ok {
			break
		}
		parts = append(parts, r.Partition)
	}
	// "two" → 2; "all" → 0..3; "none" → dropped; "default" → murmur2("abc") % 4 = 3.
	want := []int32{2, 0, 1, 2, 3, 3}
	if len(parts) != len(want) {
		t.Fatalf("partitions %v, want %v", parts, want)
	}
	for i := range want {
		if parts[i] != want[i] {
			t.Fatalf("partitions %v, want %v", parts, want)
		}
	}
}

// Produced's and Repartitioned's partitioner also goes by Kafka's name, streamPartitioner;
// both names at once are refused.
func TestStreamPartitionerIsKafkasName(t *testing.T) {
	d := driver(t, `
local b = require("stoat").builder()
b:stream("in")
  :repartition({numberOfPartitions = 4, streamPartitioner = function() return 3 end})
  :mapValues(function(v, r) return v .. r.partition end)
  :to("out", {streamPartitioner = function() return 2 end})
return b`)
	pipe(t, d, "in", "k", "v")
	r, ok := d.ReadOutput("out")
	if !ok || string(r.Value) != "v3" || r.Partition != 2 {
		t.Fatalf("output %q at partition %d (ok %v), want \"v3\" at partition 2", r.Value, r.Partition, ok)
	}
	for _, call := range []string{`to("out", `, `repartition(`} {
		msg := loadError(t, prelude+`b:stream("in"):`+call+`{partitioner = function() return 0 end, streamPartitioner = function() return 0 end})
return b`)
		if !strings.Contains(msg, "give partitioner or streamPartitioner (Kafka's name for it), not both") {
			t.Errorf("%s both names: %s", call, msg)
		}
	}
}

func TestCustomSerdeSeesHeaders(t *testing.T) {
	d := driver(t, `
local s = require("stoat")
local b = s.builder()
local tagged = s.serde{
  serialize = function(topic, headers, value) return (headers["tenant"] or "?") .. "|" .. value end,
  deserialize = function(topic, headers, bytes) return bytes end,
}
b:stream("in"):to("out", {keySerde = tagged})
return b`)
	if err := d.Pipe("in", []byte("k"), []byte("v"), 5, pipeline.Headers{{Key: "tenant", Value: []byte("t1")}}); err != nil {
		t.Fatal(err)
	}
	r, _ := d.ReadOutput("out")
	if string(r.Key) != "t1|k" {
		t.Fatalf("key = %s", r.Key)
	}
}

func names(b *pipeline.StreamsBuilder) string {
	var out []string
	for _, n := range b.Nodes() {
		out = append(out, n.Name)
	}
	return strings.Join(out, " ")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
