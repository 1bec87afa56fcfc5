package luart

import (
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Kafka's foreign-key join (KIP-213, kstream/internals/foreignkeyjoin): an inner and a left foreign-key join of orders (value
// "customer/item") with customers, the left one extracting with the key (KIP-1104). A
// customer update re-joins each of its orders; an order changing customer leaves the old
// one (the left join answers once, about the new one); an order without a customer is
// dropped by the inner join and joined with nil by the left join (KIP-962).
func TestForeignKeyTableJoin(t *testing.T) {
	runTableJoinTests(t, `local b = require("stoat").builder()
local orders, customers = b:table("orders"), b:table("customers")
local function customer(v) return v:match("^(.-)/") end
orders:join(customers, function(v, r) return customer(v) end, function(ov, cv) return ov .. "+" .. cv end,
  {name = "oc", materialized = "joined"}):toStream():to("inner")
orders:leftJoin(customers, function(k, v, r) assert(k:sub(1, 1) == "o"); return customer(v) end,
  function(ov, cv) return ov .. "+" .. tostring(cv) end, {withKey = true}):toStream():to("left")
return b
`, `local t = require("stoat.test")
local function lines(topic)
  local out = {}
  for _, r in ipairs(topic:readRecordsToList()) do
    out[#out + 1] = r.key .. "=" .. tostring(r.value) .. "@" .. r.timestamp
  end
  return out
end
t.test("inner and left", function()
  local d = t.driver("pipeline.lua")
  local o, c = d:createInputTopic("orders"), d:createInputTopic("customers")
  local inner, left = d:createOutputTopic("inner"), d:createOutputTopic("left")
  o:pipeInput("o1", "c1/pen", {timestamp = 1})
  c:pipeInput("c1", "Ann", {timestamp = 2})
  o:pipeInput("o2", "c1/ink", {timestamp = 3})
  c:pipeInput("c1", "Anne", {timestamp = 4})
  o:pipeInput("o1", "c2/pen", {timestamp = 5})
  c:pipeInput("c2", "Bob", {timestamp = 6})
  o:pipeInput("o3", "/cash", {timestamp = 7})
  c:pipeInput("c1", nil, {timestamp = 8})
  o:pipeInput("o1", nil, {timestamp = 9})
  t.assertEquals(lines(inner), {
    "o1=c1/pen+Ann@2", "o2=c1/ink+Ann@3", "o1=c1/pen+Anne@4", "o2=c1/ink+Anne@4",
    "o1=nil@5", "o1=c2/pen+Bob@6", "o2=nil@8", "o1=nil@9",
  })
  t.assertEquals(lines(left), {
    "o1=c1/pen+nil@1", "o1=c1/pen+Ann@2", "o2=c1/ink+Ann@3", "o1=c1/pen+Anne@4", "o2=c1/ink+Anne@4",
    "o1=c2/pen+nil@5", "o1=c2/pen+Bob@6", "o3=/cash+nil@7",
    "o2=c1/ink+nil@8", "o1=nil@9",
  })
  t.assertEquals(d:getKeyValueStore("joined"):get("o2"), nil)
end)
`)
}

func TestForeignKeyTableJoinRefusals(t *testing.T) {
	_, _, err := load(t, prelude+`b:table("l"):outerJoin(b:table("r"), function(v) return v end, function(a, c) return a end)
return b`, nil)
	if err == nil || !strings.Contains(err.Error(), "outerJoin has no foreign-key form") {
		t.Fatalf("foreign-key outer join: %v", err)
	}
	_, _, err = load(t, prelude+`b:table("l"):join(b:table("r"), function(v) return v end, function(a, c) return a end, {grace = 1})
return b`, nil)
	if err == nil || !strings.Contains(err.Error(), `unknown option "grace"`) {
		t.Fatalf("unknown option: %v", err)
	}
}

// TableJoined's partitioners through the DSL: a sink-shaped partitioner function, called
// with Kafka Streams' topic names; the join finds a customer in the partition the
// otherPartitioner names.
func TestForeignKeyJoinPartitionersDSL(t *testing.T) {
	_, b, err := load(t, prelude+`b:table("orders"):join(b:table("customers"), function(v) return v end, function(o, c) return o .. "+" .. c end, {
  name = "oc",
  partitioner = function(topic, key, value, headers, n)
    assert(topic == "app-oc-subscription-response-topic" and value == nil and n == 2, topic); return 1 end,
  otherPartitioner = function(topic, key, value, headers, n)
    assert(topic == "app-oc-subscription-registration-topic" and key == "c", topic); return 1 end,
}):toStream():to("out")
return b`, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := pipeline.NewDriver(b, pipeline.DriverOptions{Partitions: map[string]int32{"orders": 2, "customers": 2},
		Stores: pipeline.NewMemoryStores(), ApplicationID: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.PipeTo("customers", 1, []byte("c"), []byte("Ann"), 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.PipeTo("orders", 1, []byte("o"), []byte("c"), 2, nil); err != nil {
		t.Fatal(err)
	}
	expectLines(t, readSessions(d, "out", asText), []string{"o c+Ann @2"})
}
