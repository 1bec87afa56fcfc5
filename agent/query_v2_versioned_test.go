package agent

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
)

func TestQueryV2VersionHistoryAndVersionedRange(t *testing.T) {
	a := storesFixture(t)
	c := a.stores.Load()
	long := serdes.Long{}
	key := func(n int64) []byte {
		b, _ := long.Serialize("", nil, n)
		return b
	}
	// key 5 already holds {"v":1}@100 and {"v":2}@200; every key goes to 5's partition
	home := pipeline.DefaultPartition(key(5), c.Partitions)
	vs, err := c.DB.VersionedStore(c.Specs[4], home)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		key   int64
		value string
		ts    int64
	}{{5, "", 300}, {5, `{"v":3}`, 400}, {6, `{"v":6}`, 50}, {7, `{"v":7}`, 60}, {7, "", 70}} {
		var v []byte
		if w.value != "" {
			v = []byte(w.value)
		}
		if _, err := vs.Put(key(w.key), v, w.ts); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.DB.Commit(nil); err != nil {
		t.Fatal(err)
	}

	for _, q := range []struct{ query, want string }{
		{`{"type":"MultiVersionedKeyQuery","key":5}`,
			`[{"timestamp":100,"validTo":200,"value":{"v":1}},{"timestamp":200,"validTo":300,"value":{"v":2}},{"timestamp":400,"validTo":null,"value":{"v":3}}]`},
		{`{"type":"MultiVersionedKeyQuery","key":5,"fromTime":150,"toTime":250,"descending":true}`,
			`[{"timestamp":200,"validTo":300,"value":{"v":2}},{"timestamp":100,"validTo":200,"value":{"v":1}}]`},
		{`{"type":"MultiVersionedKeyQuery","key":5,"fromTime":"1970-01-01T00:00:00.3Z","toTime":399}`, `[]`},
		{`{"type":"MultiVersionedKeyQuery","key":8}`, `[]`},
		{`{"type":"RangeQuery"}`, `[{"key":5,"value":{"v":3}},{"key":6,"value":{"v":6}}]`},
		{`{"type":"RangeQuery","lower":6,"descending":true}`, `[{"key":6,"value":{"v":6}}]`},
		{`{"type":"RangeQuery","descending":true}`, `[{"key":6,"value":{"v":6}},{"key":5,"value":{"v":3}}]`},
	} {
		st, o := serveQuery(t, a, "POST", "/v2/query", fmt.Sprintf(`{"store":"vers","query":%s,"partitions":[%d]}`, q.query, home))
		if st != 200 {
			t.Fatalf("%s = %d %v", q.query, st, o)
		}
		r := o["partitionResults"].([]any)[0].(map[string]any)
		got, _ := json.Marshal(r["result"])
		if r["success"] != true || string(got) != q.want {
			t.Fatalf("%s = %v %s\nwant %s", q.query, r["success"], got, q.want)
		}
	}
}
