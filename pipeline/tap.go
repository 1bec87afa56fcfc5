package pipeline

import "fmt"

// TapFunc sees every record a tapped node emits: what a processor or source forwards to
// its children, what a sink writes. It runs on the processing goroutine, inside the
// node's processing, so it must be quick; the record's byte slices and values are only
// valid during the call.
type TapFunc func(rec Record)

// SetTap makes fn see the records node emits, in every task this topology runs and will
// run; nil removes the tap. An untapped node pays one nil check per record.
func (t *Topology) SetTap(node string, fn TapFunc) error {
	if _, ok := t.subtopologyOf[node]; !ok {
		return fmt.Errorf("no node named %q in this topology", node)
	}
	if fn == nil {
		delete(t.taps, node)
	} else {
		t.taps[node] = fn
	}
	for _, k := range t.order {
		if n, ok := k.byName[node]; ok {
			n.tap = fn
		}
	}
	return nil
}

// ValueSerde is the serde node's values are written with as far as the topology knows: a
// source's, a sink's, a store's (an aggregation, a materialized table) and what passes them
// on unchanged; nil when unknown (after a mapValues, say). A tap shows values as it writes
// them: a long that Lua holds as a decimal string (docs/lua.md) is a number there.
func (t *Topology) ValueSerde(node string) Serde { return t.b.ValueSerde(node) }

// ValueSerde is Topology.ValueSerde from the graph.
func (b *StreamsBuilder) ValueSerde(node string) Serde {
	for _, n := range b.nodes {
		if n.Name == node {
			if n.Kind == SinkNode {
				return n.sink.serdes.Value
			}
			return n.valueSerde
		}
	}
	return nil
}

// CurrentNode is the name of the node whose processing runs, "" between records. A
// runtime that calls into user code (Lua) reads it to say which node the time it spends
// belongs to.
func (t *Topology) CurrentNode() string {
	if t.current == nil {
		return ""
	}
	return t.current.name
}
