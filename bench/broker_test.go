package main

import (
	"strings"
	"testing"
)

func TestParseBrokersKeepsTheirOrder(t *testing.T) {
	got, err := parseBrokers(" kafka, kfake ,kafka")
	if err != nil || strings.Join(got, ",") != "kfake,kafka" {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := parseBrokers("kfake,redpanda"); err == nil || !strings.Contains(err.Error(), `"redpanda"`) {
		t.Fatalf("unknown broker: err = %v", err)
	}
	if _, err := parseBrokers(","); err == nil {
		t.Fatal("an empty list was accepted")
	}
}

// Kafka Streams runs on Apache Kafka only: left out of the default list on kfake alone, an
// error when named.
func TestRunnableLeavesKafkaStreamsToApacheKafka(t *testing.T) {
	all, err := parseScenarios("wordcount,ks-wordcount,ks-wordcount-alos")
	if err != nil {
		t.Fatal(err)
	}
	got, err := runnable(all, []string{brokerKfake}, false)
	if err != nil || len(got) != 1 || got[0].name != "wordcount" {
		t.Fatalf("kfake, default list: %v, %v", got, err)
	}
	if _, err := runnable(all, []string{brokerKfake}, true); err == nil || !strings.Contains(err.Error(), "ks-wordcount runs on Apache Kafka only: -brokers kfake,kafka") {
		t.Fatalf("kfake, named: err = %v", err)
	}
	if got, err := runnable(all, []string{brokerKfake, apacheKafka}, true); err != nil || len(got) != 3 {
		t.Fatalf("both: %v, %v", got, err)
	}
	if _, err := runnable(all[1:], []string{brokerKfake}, false); err == nil {
		t.Fatal("no runnable scenario was accepted")
	}
}

// Kafka Streams gets the agent's [streams] config of the same word count, key for key.
func TestStreamsPropertiesAreTheWordCountsConfig(t *testing.T) {
	for ks, ours := range map[string]string{"ks-wordcount": "wordcount", "ks-wordcount-alos": "wordcount-alos"} {
		k, err := scenarioNamed(ks)
		if err != nil {
			t.Fatal(err)
		}
		o, err := scenarioNamed(ours)
		if err != nil {
			t.Fatal(err)
		}
		if k.streams != o.streams {
			t.Errorf("%s runs with other [streams] than %s:\n%s\n%s", ks, ours, k.streams, o.streams)
		}
		props, err := streamsProperties(k, []string{"127.0.0.1:1", "127.0.0.1:2"}, `/tmp/x\y`)
		if err != nil {
			t.Fatal(err)
		}
		guarantee := "exactly_once_v2"
		if strings.HasSuffix(ks, "-alos") {
			guarantee = "at_least_once"
		}
		want := "application.id=bench-" + ks + "\n" +
			"bootstrap.servers=127.0.0.1:1,127.0.0.1:2\n" +
			"commit.interval.ms=100\n" +
			"enable.transactional.statestores=true\n" +
			"processing.guarantee=" + guarantee + "\n" +
			`state.dir=/tmp/x\\y` + "\n" +
			"statestore.cache.max.bytes=0\n"
		if string(props) != want {
			t.Errorf("%s:\n%s\nwant\n%s", ks, props, want)
		}
	}
}

func TestCountCheck(t *testing.T) {
	long := func(v int64) []byte { return []byte{0, 0, 0, 0, 0, 0, 0, byte(v)} }
	feed := func(c *countCheck, updates map[string][]int64) {
		for k, vs := range updates {
			for _, v := range vs {
				c.tally().add([]byte(k), long(v), 0, v)
			}
		}
	}
	input := func(c *countCheck) {
		want := c.wrap(everyRecord())
		for _, w := range []string{"a", "b", "a", "a"} {
			want.add(w, 0)
		}
		if want.total() != 4 {
			t.Fatalf("the wrapped counter counts %d outputs", want.total())
		}
	}

	c := newCountCheck(true)
	input(c)
	feed(c, map[string][]int64{"a": {1, 2, 3}, "b": {1}})
	if err := c.verify(); err != nil {
		t.Fatalf("exact counts: %v", err)
	}
	for name, updates := range map[string]map[string][]int64{
		"a duplicate":  {"a": {1, 2, 2, 3}, "b": {1}},
		"a lost count": {"a": {1, 3}, "b": {1}},
		"a word less":  {"a": {1, 2, 3}},
		"a word more":  {"a": {1, 2, 3}, "b": {1}, "c": {1}},
	} {
		c := newCountCheck(true)
		input(c)
		feed(c, updates)
		if err := c.verify(); err == nil || !strings.Contains(err.Error(), "counted wrong, read read_committed") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	c = newCountCheck(true)
	input(c)
	c.tally().add([]byte("a"), []byte("3"), 2, 17)
	if err := c.verify(); err == nil || !strings.Contains(err.Error(), "bench-out-2@17: a 1-byte value") {
		t.Errorf("a value that is no count: err = %v", err)
	}

	off := newCountCheck(false)
	if off.tally() != nil || off.verify() != nil || off.wrap(everyRecord()) == nil {
		t.Error("a check that is off checks something")
	}
}
