package agent

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// storeKindsScript writes every store kind from one processor.
const storeKindsScript = `
local s = require("stoat")
local b = s.builder()
b:addStateStore{name = "win", type = "timestampedWindow", retention = "1h", windowSize = "10s", valueSerde = "long"}
b:addStateStore{name = "ses", type = "session", retention = "1h", valueSerde = "long"}
b:addStateStore{name = "ver", type = "versionedKeyValue", historyRetention = "1h"}
b:addStateStore{name = "hkv", type = "timestampedKeyValue", headers = true}
b:addStateStore{name = "hwin", type = "timestampedWindow", retention = "1h", windowSize = "10s", headers = true}
b:stream("in"):process(function()
  local win, ses, ver, hkv, hwin
  return {
    init = function(ctx)
      win, ses, ver = ctx:getStateStore("win"), ctx:getStateStore("ses"), ctx:getStateStore("ver")
      hkv, hwin = ctx:getStateStore("hkv"), ctx:getStateStore("hwin")
    end,
    process = function(ctx, k, v, r)
      local start = r.timestamp - r.timestamp % 10000
      win:put(k, (win:fetch(k, start) or 0) + 1, start)
      ses:put({key = k, window = {start = r.timestamp, ["end"] = r.timestamp + 5}}, 1)
      ver:put(k, v)
      hkv:put(k, v)
      hwin:put(k, v, start)
      ctx:forward(k, v)
    end,
  }
end, {stores = {"win", "ses", "ver", "hkv", "hwin"}}):to("out")
return b
`

// The specs of storeKindsScript's stores, to read them directly.
var storeKindsSpecs = map[string]pipeline.StoreSpec{
	"win":  {Name: "win", Type: pipeline.TimestampedWindowStoreType, Logged: true, Retention: 3_600_000, WindowSize: 10_000},
	"ses":  {Name: "ses", Type: pipeline.SessionStoreType, Logged: true, Retention: 3_600_000},
	"ver":  {Name: "ver", Type: pipeline.VersionedKeyValueStoreType, Logged: true, HistoryRetention: 3_600_000},
	"hkv":  {Name: "hkv", Type: pipeline.TimestampedKeyValueStoreType, Logged: true, Headers: true},
	"hwin": {Name: "hwin", Type: pipeline.TimestampedWindowStoreType, Logged: true, Headers: true, Retention: 3_600_000, WindowSize: 10_000},
}

func be64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func TestStoreKindsChangelogBytesAndRestore(t *testing.T) {
	storeKindsChangelogBytesAndRestore(t, onKfake(t, 1, "in", "out"))
}

func storeKindsChangelogBytesAndRestore(t *testing.T, b *brokerUnderTest) {
	const n = 3
	brokers := b.brokers
	cfg := b.config(t, storeKindsScript, "processing.guarantee = \"exactly_once_v2\"\n")
	ra := startAgentWith(t, cfg, metrics.New())
	produce(t, brokers, b.topic(t, "in"), 0, n, []sarama.RecordHeader{{Key: []byte("h"), Value: []byte("x")}}, 0)
	readAll(t, brokers, b.topic(t, "out"), n)

	// Kafka Streams' changelog formats (ChangeLoggingTimestampedKeyValueBytesStore, WindowKeySchema, SessionKeySchema, KIP-1271's headers-aware values): window keys
	// [key][start][seqnum], session keys [key][end][start], raw values, the value's
	// timestamp as record timestamp; headers-aware stores send their headers.
	t0 := producedAt
	for _, c := range []struct {
		store   string
		key     func(i int) []byte
		value   func(i int) []byte
		headers bool
	}{
		{"win", func(i int) []byte { return append(append([]byte(fmt.Sprintf("k%d", i)), be64(t0)...), 0, 0, 0, 0) },
			func(int) []byte { return be64(1) }, false},
		{"ses", func(i int) []byte {
			ts := t0 + int64(i)
			return append(append([]byte(fmt.Sprintf("k%d", i)), be64(ts+5)...), be64(ts)...)
		}, func(int) []byte { return be64(1) }, false},
		{"ver", func(i int) []byte { return []byte(fmt.Sprintf("k%d", i)) },
			func(i int) []byte { return []byte(fmt.Sprintf("v%d", i)) }, false},
		{"hkv", func(i int) []byte { return []byte(fmt.Sprintf("k%d", i)) },
			func(i int) []byte { return []byte(fmt.Sprintf("v%d", i)) }, true},
		{"hwin", func(i int) []byte { return append(append([]byte(fmt.Sprintf("k%d", i)), be64(t0)...), 0, 0, 0, 0) },
			func(i int) []byte { return []byte(fmt.Sprintf("v%d", i)) }, true},
	} {
		msgs := readAll(t, brokers, pipeline.ChangelogTopic(cfg.ApplicationID, c.store), n)
		if len(msgs) != n {
			t.Fatalf("%s: %d changelog records, want %d", c.store, len(msgs), n)
		}
		for i, m := range msgs {
			if !bytes.Equal(m.Key, c.key(i)) || !bytes.Equal(m.Value, c.value(i)) || m.Timestamp.UnixMilli() != t0+int64(i) {
				t.Errorf("%s record %d = key %x value %x ts %d; want key %x value %x ts %d",
					c.store, i, m.Key, m.Value, m.Timestamp.UnixMilli(), c.key(i), c.value(i), t0+int64(i))
			}
			hs := len(m.Headers) == 1 && string(m.Headers[0].Key) == "h" && string(m.Headers[0].Value) == "x"
			if hs != c.headers || (!c.headers && len(m.Headers) != 0) {
				t.Errorf("%s record %d headers = %v", c.store, i, m.Headers)
			}
		}
	}
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}

	dbDir := filepath.Join(cfg.StateDir, cfg.ApplicationID, "db")
	before := dumpStoreKinds(t, dbDir, n)
	if err := os.RemoveAll(dbDir); err != nil {
		t.Fatal(err)
	}
	ra = startAgentWith(t, cfg, metrics.New())
	if err := ra.stop(t); err != nil {
		t.Fatal(err)
	}
	after := dumpStoreKinds(t, dbDir, n)
	if before != after || !strings.Contains(before, fmt.Sprintf("win k2@%d=0000000000000001@%d", t0, t0+2)) {
		t.Fatalf("restored stores differ:\nbefore %s\nafter  %s", before, after)
	}
}

// dumpStoreKinds renders every store of storeKindsScript, read straight from LevelDB.
func dumpStoreKinds(t *testing.T, dir string, keys int) string {
	t.Helper()
	db, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var sb strings.Builder
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"win", "hwin"} {
		w, err := db.WindowStore(storeKindsSpecs[name], 0)
		check(err)
		it := w.All(false)
		for it.Next() {
			h, err := it.Headers()
			check(err)
			fmt.Fprintf(&sb, "%s %s@%d=%x@%d %v\n", name, it.Key(), it.Start(), it.Value(), it.Timestamp(), h)
		}
		check(it.Err())
		it.Close()
	}
	ses, err := db.SessionStore(storeKindsSpecs["ses"], 0)
	check(err)
	sit := ses.FetchRange(nil, nil, false)
	for sit.Next() {
		fmt.Fprintf(&sb, "ses %s[%d,%d]=%x\n", sit.Key(), sit.Start(), sit.End(), sit.Value())
	}
	check(sit.Err())
	sit.Close()
	hkv, err := db.TimestampedKeyValueStore(storeKindsSpecs["hkv"], 0)
	check(err)
	ver, err := db.VersionedStore(storeKindsSpecs["ver"], 0)
	check(err)
	for i := 0; i < keys; i++ {
		k := []byte(fmt.Sprintf("k%d", i))
		v, ts, h, err := hkv.GetWithHeaders(k)
		check(err)
		rec, found, err := ver.GetAsOf(k, math.MaxInt64)
		check(err)
		fmt.Fprintf(&sb, "hkv %s=%s@%d %v; ver %v %s@%d-%d\n", k, v, ts, h, found, rec.Value, rec.Timestamp, rec.ValidTo)
	}
	return sb.String()
}
