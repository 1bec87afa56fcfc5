package luart

import (
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Kafka's KStreamGlobalKTableJoin (through KStreamKTableJoinProcessor): the KIP-1340 vector,
// the 4.1+ null rules (KAFKA-19208) and the joiner arities.
func TestGlobalTableJoins(t *testing.T) {
	rt, b, err := load(t, prelude+`
local products = b:globalTable("products")
local function fk(k, v, r) local _, _, f = v:find(",(.*)$") if f == "" then return nil end return f end
b:stream("orders"):join(products, fk, function(sk, mk, sv, tv) return mk .. "|" .. sk .. "|" .. sv .. "|" .. tv end):to("joined")
b:stream("orders2"):leftJoin(products, fk, function(sk, mk, sv, tv, r)
  return tostring(mk) .. "|" .. sk .. "|" .. sv .. "|" .. tostring(tv) .. "@" .. r.offset
end):to("left")
b:stream("orders3"):join(products, fk, function(k, sv, tv) return k .. ":" .. tv end):to("three")
b:stream("orders4"):join(products, fk, function(sv, tv) return sv .. ":" .. tv end, { name = "two-args" }):to("two")
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rt.Warnings) != 1 || !strings.Contains(rt.Warnings[0], "pipeline.lua:10") || !strings.Contains(rt.Warnings[0], "deprecated") {
		t.Fatalf("warnings %q: want one deprecation warning for the 3-argument joiner at line 10", rt.Warnings)
	}
	if got := names(b); !strings.Contains(got, "two-args") || !strings.Contains(got, "KSTREAM-LEFTJOIN-") {
		t.Fatalf("names %s", got)
	}
	d := storeDriverFor(t, b)
	pipe(t, d, "products", "FKey0", "Y0")
	pipe(t, d, "orders", "0", "X0,FKey0")
	pipe(t, d, "orders", "1", "X1,")      // inner: nil mapped key dropped
	pipe(t, d, "orders", "2", "X2,other") // inner: no table value
	pipe(t, d, "orders2", "0", "L0,")
	pipe(t, d, "orders2", "1", "L1,other")
	pipe(t, d, "orders2", "2", "L2,FKey0")
	pipe(t, d, "orders3", "k", "x,FKey0")
	pipe(t, d, "orders4", "k", "x,FKey0")
	if got := outputs(d, "joined"); len(got) != 1 || got[0] != (kv{"0", "FKey0|0|X0,FKey0|Y0"}) {
		t.Fatalf("joined = %v", got)
	}
	want := []kv{{"0", "nil|0|L0,|nil@0"}, {"1", "other|1|L1,other|nil@1"}, {"2", "FKey0|2|L2,FKey0|Y0@2"}}
	if got := outputs(d, "left"); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("left = %v, want %v", got, want)
	}
	if got := outputs(d, "three"); len(got) != 1 || got[0] != (kv{"k", "k:Y0"}) {
		t.Fatalf("3-argument joiner gets the stream key: %v", got)
	}
	if got := outputs(d, "two"); len(got) != 1 || got[0] != (kv{"k", "x,FKey0:Y0"}) {
		t.Fatalf("two = %v", got)
	}
	// Global table updates never emit.
	pipe(t, d, "products", "FKey0", "Y1")
	if d.Pending("joined") != 0 {
		t.Fatal("a global table update produced join output")
	}
}

func TestGlobalTableOptions(t *testing.T) {
	rt, b, err := load(t, prelude+`
local g = b:globalTable("products", { keySerde = "string", valueSerde = "long", materialized = "products-store" })
assert(g:queryableStoreName() == "products-store")
b:stream("orders"):join(g, function(k) return k end, function(sv, tv) return sv end):to("out")
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rt.Warnings) != 0 || !b.IsGlobalStore("products-store") {
		t.Fatalf("warnings %q, stores %v", rt.Warnings, b.GlobalStores())
	}
	if _, _, err := load(t, prelude+`b:globalTable("p", { materialized = { logging = false } }) return b`, nil); err == nil || !strings.Contains(err.Error(), "no changelog") {
		t.Fatalf("logging option: %v", err)
	}
}

func storeDriverFor(t *testing.T, b *pipeline.StreamsBuilder) *pipeline.Driver {
	t.Helper()
	d, err := pipeline.NewDriver(b, pipeline.DriverOptions{Stores: pipeline.NewMemoryStores(), ApplicationID: "app"})
	if err != nil {
		t.Fatalf("driver: %v", err)
	}
	return d
}
