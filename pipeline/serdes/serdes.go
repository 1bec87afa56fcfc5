// Package serdes holds StoatFlow's built-in serdes. string, bytes, long, integer and double
// are byte-compatible with Kafka's org.apache.kafka.common.serialization serdes, and json
// writes plain UTF-8 JSON text, so Java applications can share topics and changelogs with
// StoatFlow.
//
// Every serde maps a nil value to nil bytes and nil bytes to a nil value: a null is a
// tombstone, as in Kafka. Each type's documentation names the Go type its Deserialize
// produces and the Go types its Serialize accepts; the Lua runtime converts to and from
// exactly those. Errors name the serde and what was wrong; the caller adds where the data
// came from (topic-partition@offset).
package serdes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stoatflow/stoatflow/pipeline"
)

// builtin are the built-in serdes in their declaration order: string, the default serde,
// first. The config's default.key.serde and default.value.serde accept these names, in this
// order.
var builtin = []pipeline.Serde{String{}, Bytes{}, JSON{}, Long{}, Integer{}, Double{}}

// The names of Kafka Streams' WindowedSerdes: windowed-<inner> is a TimeWindowedSerde
// (its window size comes from the script or window.size.ms), session-windowed-<inner> a
// SessionWindowedSerde, over a built-in inner serde.
const (
	windowedPrefix        = "windowed-"
	sessionWindowedPrefix = "session-windowed-"
)

// ByName returns the built-in serde with the given name, as written in a pipeline script.
func ByName(name string) (pipeline.Serde, error) {
	for _, s := range builtin {
		if s.Name() == name {
			return s, nil
		}
	}
	for _, prefix := range []string{windowedPrefix, sessionWindowedPrefix} {
		inner, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		s, err := ByName(inner)
		if err != nil || strings.Contains(inner, windowedPrefix) {
			return nil, fmt.Errorf("serde %q: %s needs a built-in inner serde (%s), not %q", name, prefix, strings.Join(Names(), ", "), inner)
		}
		if prefix == windowedPrefix {
			return pipeline.TimeWindowedSerde{Inner: s}, nil
		}
		return pipeline.SessionWindowedSerde{Inner: s}, nil
	}
	return nil, fmt.Errorf("unknown serde %q (known: %s, and windowed-<name>, session-windowed-<name>)", name, strings.Join(Names(), ", "))
}

// Names lists the built-in serde names in sorted order.
func Names() []string {
	names := Builtin()
	slices.Sort(names)
	return names
}

// Builtin lists the built-in serde names in their declaration order.
func Builtin() []string {
	names := make([]string, len(builtin))
	for i, s := range builtin {
		names[i] = s.Name()
	}
	return names
}
