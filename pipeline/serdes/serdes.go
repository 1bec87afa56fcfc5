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

var builtin = map[string]pipeline.Serde{
	String{}.Name():  String{},
	Bytes{}.Name():   Bytes{},
	Long{}.Name():    Long{},
	Integer{}.Name(): Integer{},
	Double{}.Name():  Double{},
	JSON{}.Name():    JSON{},
}

// windowedPrefix starts the names of the windowed serdes (windowed-string, windowed-long, ...),
// which need the window key formats.
const windowedPrefix = "windowed-"

// ByName returns the built-in serde with the given name, as written in a pipeline script.
func ByName(name string) (pipeline.Serde, error) {
	if s, ok := builtin[name]; ok {
		return s, nil
	}
	if strings.HasPrefix(name, windowedPrefix) {
		return nil, fmt.Errorf("serde %q: not supported yet: windowed serdes", name)
	}
	return nil, fmt.Errorf("unknown serde %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the built-in serde names in sorted order.
func Names() []string {
	names := make([]string, 0, len(builtin))
	for n := range builtin {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
