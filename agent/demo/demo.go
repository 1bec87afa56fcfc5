// Package demo holds the demo feeders of the embedded broker (agent.embedded.demo). A feeder
// writes the sample records that one example pipeline of scripts/ reads, so that
// `make run EXAMPLE=name` shows the example working on a fresh machine. Each feeder is one
// file of this package that registers itself by name; the package knows no Kafka client.
package demo

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Record is one record a feeder writes; Kafka's default partitioner places it by its key.
type Record struct {
	Topic      string
	Key, Value []byte
	// Data is the value as data (maps, lists, numbers, strings), for a feeder whose
	// ValueSchema writes it; Value is then empty.
	Data any
}

// Feeder writes sample records, a few every tick.
type Feeder struct {
	// Topics are the topics it writes: the topology must read each of them.
	Topics []string
	// Every is the time between two ticks.
	Every time.Duration
	// Tick returns the records of tick i (0, 1, 2, ...) at time now; the same every run
	// for the same now.
	Tick func(i int, now time.Time) []Record
	// ValueSchema, when set, is the file of an Avro schema next to the example's first
	// script: the agent writes each record's Data with it, through the application's schema
	// registry, as a producing service would.
	ValueSchema string
}

var feeders = map[string]Feeder{}

// register adds a feeder; each feeder's file calls it from init.
func register(name string, f Feeder) {
	if _, dup := feeders[name]; dup {
		panic("demo: feeder " + name + " registered twice")
	}
	feeders[name] = f
}

// Names lists the feeders, sorted.
func Names() []string {
	names := make([]string, 0, len(feeders))
	for n := range feeders {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup finds a feeder and checks that the topology reads every topic it writes.
func Lookup(name string, sources []string) (Feeder, error) {
	f, ok := feeders[name]
	if !ok {
		return Feeder{}, fmt.Errorf("agent.embedded.demo: no demo feeder %q (there are: %s)", name, strings.Join(Names(), ", "))
	}
	for _, t := range f.Topics {
		if !slices.Contains(sources, t) {
			return Feeder{}, fmt.Errorf("agent.embedded.demo: the demo feeder %q writes %s, which the topology does not read (it reads %s); pick the feeder of this example",
				name, strings.Join(f.Topics, ", "), strings.Join(sources, ", "))
		}
	}
	return f, nil
}
