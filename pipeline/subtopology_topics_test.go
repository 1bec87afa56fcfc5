package pipeline

import (
	"reflect"
	"slices"
	"testing"
)

// SubtopologyTopics lists per sub-topology what Kafka Streams' TopicsInfo does: a re-keyed
// stream joined with a table reads its repartition topic in the join's sub-topology, where
// the join's topics must be co-partitioned and the table's store is logged; a grouped count
// repartitions again; the global table's sub-topology is none of them; a fixed partition
// count goes with its repartition topic. (Apache Kafka compares the whole declaration with
// Kafka Streams': agent/kafkaio's real-broker tests.)
func TestSubtopologyTopicsAreKafkaStreamsTopicsInfo(t *testing.T) {
	b := newTestBuilder()
	if _, err := b.GlobalTable("rates", Consumed{}, Materialized{StoreName: "rates"}); err != nil {
		t.Fatal(err)
	}
	users, err := b.Table("users", Consumed{}, Materialized{StoreName: "users"})
	if err != nil {
		t.Fatal(err)
	}
	clicks, err := b.Stream([]string{"clicks"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	byUser, err := clicks.SelectKey(func(rec Record) (any, error) { return rec.Value, nil }, "")
	if err != nil {
		t.Fatal(err)
	}
	joined, err := byUser.Join(users, func(rec Record, u any) (any, error) { return u, nil }, Joined{})
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := joined.Repartition(Repartitioned{NumPartitions: 6})
	if err != nil {
		t.Fatal(err)
	}
	grouped, err := fixed.GroupBy(func(rec Record) (any, error) { return rec.Value, nil }, Grouped{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := grouped.Count(Materialized{StoreName: "counts", LoggingDisabled: true}, bytesSerde{}, ""); err != nil {
		t.Fatal(err)
	}

	subs := b.SubtopologyTopics("app")
	var ids []int
	for _, s := range subs {
		ids = append(ids, s.ID)
	}
	// 0 is the global table's; the others in describe()'s numbering.
	if !reflect.DeepEqual(ids, []int{1, 2, 3, 4}) {
		t.Fatalf("sub-topology ids %v, want 1..4 (the global table's 0 has no tasks)", ids)
	}
	// describe()'s numbering follows the order nodes were added: the users table first.
	join, first, second, count := subs[0], subs[1], subs[2], subs[3]
	if !slices.Equal(first.SourceTopics, []string{"clicks"}) || len(first.RepartitionSinks) != 1 || len(first.Changelogs) != 0 {
		t.Errorf("the re-keying sub-topology: %+v", first)
	}
	rekeyed := first.RepartitionSinks[0]
	if want := []RepartitionTopic{{Name: rekeyed}}; !reflect.DeepEqual(join.RepartitionSources, want) {
		t.Errorf("the join reads %v, want %v (decorated, no fixed count)", join.RepartitionSources, want)
	}
	if !slices.Equal(join.SourceTopics, []string{"users"}) {
		t.Errorf("the join's source topics %v, want [users]", join.SourceTopics)
	}
	if len(join.Changelogs) != 1 || join.Changelogs[0].Name != "app-users-changelog" || join.Changelogs[0].Store.Name != "users" {
		t.Errorf("the join's changelogs %+v, want the users store's", join.Changelogs)
	}
	if len(join.CopartitionGroups) != 1 || !sameSet(join.CopartitionGroups[0], []string{"users", rekeyed}) {
		t.Errorf("the join's co-partition groups %v, want {users, %s}", join.CopartitionGroups, rekeyed)
	}
	if len(second.RepartitionSources) != 1 || second.RepartitionSources[0].Partitions != 6 {
		t.Errorf("repartition(6) reads %+v, want a topic of 6 partitions", second.RepartitionSources)
	}
	if len(count.Changelogs) != 0 {
		t.Errorf("a count without logging has changelogs %+v", count.Changelogs)
	}
	if !slices.Equal(count.Stores, []string{"counts"}) || !slices.Equal(join.Stores, []string{"users"}) {
		t.Errorf("stores: the count's %v, want [counts] (not logged, still its); the join's %v, want [users]", count.Stores, join.Stores)
	}
	if len(count.RepartitionSources) != 1 || count.RepartitionSources[0].Partitions != 0 || !slices.Contains(second.RepartitionSinks, count.RepartitionSources[0].Name) {
		t.Errorf("groupBy's repartition: written %v, read %+v", second.RepartitionSinks, count.RepartitionSources)
	}
}

// Joins whose topics overlap make one co-partition group, as Kafka Streams' copartitionGroups
// merges them.
func TestCopartitionGroupsMergeOverlappingJoins(t *testing.T) {
	b := newTestBuilder()
	a, err := b.Table("a", Consumed{}, Materialized{StoreName: "a"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Table("c", Consumed{}, Materialized{StoreName: "c"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.Stream([]string{"s"}, Consumed{})
	if err != nil {
		t.Fatal(err)
	}
	joiner := func(rec Record, v any) (any, error) { return v, nil }
	j1, err := s.Join(a, joiner, Joined{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j1.Join(c, joiner, Joined{}); err != nil {
		t.Fatal(err)
	}
	subs := b.SubtopologyTopics("app")
	if len(subs) != 1 || len(subs[0].CopartitionGroups) != 1 || !sameSet(subs[0].CopartitionGroups[0], []string{"a", "c", "s"}) {
		t.Fatalf("co-partition groups %+v, want one {a, c, s}", subs)
	}
}
