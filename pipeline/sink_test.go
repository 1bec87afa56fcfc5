package pipeline

import (
	"testing"
)

// sourceCollector keeps the source record of every record sent to it.
type sourceCollector struct {
	Driver
	sources map[string][]*SourceRecord // by topic
}

func (c *sourceCollector) Send(topic string, _ int32, _, _ []byte, _ Headers, _ int64, source *SourceRecord) error {
	c.sources[topic] = append(c.sources[topic], source)
	return nil
}

// What a sink sends while a record is processed names that record as its source, so the
// agent can say which consumed record a refused send came from; what a cache flush forwards
// at a commit has none.
func TestSinksNameTheRecordBeingProcessed(t *testing.T) {
	b := newTestBuilder()
	s, _ := b.Stream([]string{"in"}, Consumed{})
	if err := s.To("copy", Produced{}); err != nil {
		t.Fatal(err)
	}
	g, _ := s.GroupByKey(Grouped{})
	agg, _ := g.Aggregate(func() (any, error) { return "", nil },
		func(r Record, agg any) (any, error) { return agg.(string) + r.Value.(string), nil }, Materialized{StoreName: "agg"}, "")
	cached, _ := agg.ToStream("")
	if err := cached.To("agg", Produced{}); err != nil {
		t.Fatal(err)
	}
	c := &sourceCollector{sources: map[string][]*SourceRecord{}}
	topo, err := b.Build(TopologyOptions{Collector: c, Stores: NewMemoryStores(), CacheMaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	first := &SourceRecord{Topic: "in", Offset: 0, Key: []byte("k"), Value: []byte("a"), Timestamp: 1}
	second := &SourceRecord{Topic: "in", Offset: 1, Key: []byte("k"), Value: []byte("b"), Timestamp: 2}
	for _, in := range []*SourceRecord{first, second} {
		if err := topo.Process(in); err != nil {
			t.Fatal(err)
		}
	}
	if err := topo.FlushCaches(); err != nil {
		t.Fatal(err)
	}
	if got := c.sources["copy"]; len(got) != 2 || got[0] != first || got[1] != second {
		t.Errorf("sources of the records sent while processing: %v, want the two input records", got)
	}
	if got := c.sources["agg"]; len(got) != 1 || got[0] != nil {
		t.Errorf("sources of the records a cache flush sent: %v, want one nil", got)
	}
}
