package pipeline

import (
	"strings"
	"testing"
)

// Kafka Streams refuses these names when the topology is built (Named.validate, Kafka's
// Topic.validate rule); a broker refuses such topics. Each must fail where it is given.
func TestIllegalNamesAreRefusedWhereTheyAreGiven(t *testing.T) {
	long := strings.Repeat("a", maxNameLength+1)
	keep := func(Record) (bool, error) { return true, nil }
	cases := []struct {
		name  string
		build func(b *StreamsBuilder) error
		want  string
	}{
		{"source topic", func(b *StreamsBuilder) error {
			_, err := b.Stream([]string{"in put"}, Consumed{})
			return err
		}, `topic name "in put" is illegal`},
		{"sink topic", func(b *StreamsBuilder) error {
			s, _ := b.Stream([]string{"in"}, Consumed{})
			return s.To("out/x", Produced{})
		}, `topic name "out/x" is illegal`},
		{"processor name", func(b *StreamsBuilder) error {
			s, _ := b.Stream([]string{"in"}, Consumed{})
			_, err := s.Filter(keep, "my filter")
			return err
		}, `processor name "my filter" is illegal`},
		{"long processor name", func(b *StreamsBuilder) error {
			s, _ := b.Stream([]string{"in"}, Consumed{})
			_, err := s.Filter(keep, long)
			return err
		}, "processor name is illegal: it can't be longer than 249 characters"},
		{"dot topic", func(b *StreamsBuilder) error {
			_, err := b.Stream([]string{".."}, Consumed{})
			return err
		}, `topic name cannot be ".."`},
		{"materialized store", func(b *StreamsBuilder) error {
			s, _ := b.Stream([]string{"in"}, Consumed{})
			g, _ := s.GroupByKey(Grouped{})
			_, err := g.Count(Materialized{StoreName: "my store", Given: true}, bytesSerde{}, "")
			return err
		}, `store name "my store" is illegal`},
		{"added store", func(b *StreamsBuilder) error {
			return b.AddStateStore(StoreSpec{Name: "a:b", Type: KeyValueStoreType})
		}, `addStateStore: store name "a:b" is illegal`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.build(newTestBuilder())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	// The longest legal name passes.
	b := newTestBuilder()
	if _, err := b.Stream([]string{long[:maxNameLength]}, Consumed{}); err != nil {
		t.Fatalf("a 249-character topic: %v", err)
	}
}
