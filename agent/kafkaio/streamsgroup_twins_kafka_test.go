//go:build kafka

package kafkaio_test

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/luart"
	"github.com/stoatflow/stoatflow/pipeline"
)

// The Lua twins of the Kafka Streams topologies of test/kafka/kstreamstest/StreamsApp.java:
// the same operations in the same order, so that Kafka Streams' generated names are ours.
// IN, OUT, TABLE and OTHER are replaced by the test's topics.
var twins = map[string]string{
	"wordcount": `
b:stream(IN)
  :flatMapValues(function(v)
    local t = {}
    for w in v:lower():gmatch("[a-z]+") do t[#t + 1] = w end
    return t
  end)
  :groupBy(function(_, w) return w end)
  :count()
  :toStream()
  :to(OUT, { valueSerde = "long" })`,
	"table_groupby_count": `
b:table(IN)
  :groupBy(function(k, v) return v, k end)
  :count({ materialized = "by-region" })
  :toStream()
  :to(OUT, { valueSerde = "long" })`,
	"windowed": `
b:stream(IN)
  :groupByKey()
  :windowedBy(s.TimeWindows.ofSizeAndGrace(60000, 10000))
  :count({ materialized = "per-minute" })
  :toStream()
  :to(OUT, { keySerde = s.WindowedSerdes.timeWindowedSerdeFrom("string", 60000), valueSerde = "long" })`,
	"session": `
b:stream(IN)
  :groupByKey()
  :windowedBy(s.SessionWindows.ofInactivityGapAndGrace(30000, 5000))
  :count()
  :toStream()
  :to(OUT, { keySerde = s.WindowedSerdes.sessionWindowedSerdeFrom("string"), valueSerde = "long" })`,
	"stream_table_join": `
local users = b:table(TABLE, { materialized = "users" })
b:stream(IN):join(users, function(o, u) return o .. "/" .. u end):to(OUT)`,
	"rekey_join": `
local l = b:stream(IN):selectKey(function(_, v) return v end)
local r = b:stream(OTHER):repartition({ numberOfPartitions = 4 })
l:join(r, function(lv, rv) return lv .. "+" .. rv end, s.JoinWindows.ofTimeDifferenceAndGrace(5000, 1000)):to(OUT)`,
	"fk_join": `
local orders = b:table(IN)
local customers = b:table(TABLE)
orders:join(customers, function(v) return v:sub(1, v:find("|", 1, true) - 1) end, function(o, c) return o .. "/" .. c end)
  :toStream():to(OUT)`,
	"global_table": `
local rates = b:globalTable(TABLE, { materialized = "rates" })
b:stream(IN):join(rates, function(_, v) return v end, function(v, r) return v .. "@" .. r end):to(OUT)`,
}

// twinBuilder loads the Lua twin of a topology with the test's topic names.
func twinBuilder(t *testing.T, name string, topics map[string]string) *pipeline.StreamsBuilder {
	t.Helper()
	body, ok := twins[name]
	if !ok {
		t.Fatalf("no Lua twin %q", name)
	}
	var head strings.Builder
	head.WriteString("local s = require(\"stoat\")\nlocal b = s.builder()\n")
	for _, k := range []string{"in", "out", "table", "other"} {
		head.WriteString("local " + strings.ToUpper(k) + " = \"" + topics[k] + "\"\n")
	}
	file := filepath.Join(t.TempDir(), name+".lua")
	if err := os.WriteFile(file, []byte(head.String()+body+"\nreturn b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rt, err := luart.New(luart.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	b, err := rt.LoadScripts([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// twinTopology declares a twin's topology for the application.
func twinTopology(t *testing.T, name, app string, topics map[string]string) (*kafkaio.StreamsTopology, *pipeline.StreamsBuilder) {
	t.Helper()
	b := twinBuilder(t, name, topics)
	topo, err := kafkaio.DeclareTopology(b.SubtopologyTopics(app), kafkaio.TopologyOptions{
		ReplicationFactor:                       -1,
		WindowStoreChangelogAdditionalRetention: 24 * time.Hour, // Kafka Streams' default
	})
	if err != nil {
		t.Fatal(err)
	}
	return topo, b
}
