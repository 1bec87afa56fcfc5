package pipeline

import "fmt"

// AddGlobalStore adds a global store kept by a processor of the user's
// (StreamsBuilder#addGlobalStore): every record of topic, all partitions, goes through the
// processor, which writes the store's only partition, before processing starts and while it
// runs; a restart replays what is new through it too (Kafka Streams 3.4+ restores a DSL
// global store through its processor, KAFKA-7663). The store has no changelog, its topic is
// its changelog: logging is turned off as Kafka's DSL does. As in Kafka Streams the source
// takes the next index, then the KTABLE-SOURCE processor.
func (b *StreamsBuilder) AddGlobalStore(spec StoreSpec, topic string, c Consumed, supplier ProcessorSupplier) error {
	switch {
	case topic == "":
		return fmt.Errorf("addGlobalStore: empty topic name")
	case supplier == nil:
		return fmt.Errorf("addGlobalStore: a global store needs its processor")
	}
	if b.sourceOf(topic) != nil {
		return fmt.Errorf("addGlobalStore: topic %q is already a source of this topology (Kafka Streams allows one source per topic)", topic)
	}
	for _, g := range b.globalSources() {
		if g.Topics[0] == topic {
			return fmt.Errorf("addGlobalStore: topic %q is already read by another global store", topic)
		}
	}
	spec.Logged = false
	if err := b.AddStateStore(spec); err != nil {
		return fmt.Errorf("addGlobalStore: %w", err)
	}
	serdes := b.orDefaults(c.Serdes)
	src, err := b.addNode(&Node{
		Name:   b.newName("KSTREAM-SOURCE-", ""),
		Kind:   SourceNode,
		Topics: []string{topic},
		source: &sourceSpec{serdes: serdes, extractor: c.TimestampExtractor},
	})
	if err != nil {
		return err
	}
	n, err := b.addNode(&Node{Name: b.newName("KTABLE-SOURCE-", ""), Kind: ProcessorNode, Stores: []string{spec.Name},
		factory: func() Processor {
			return &userProcNode{supplier: supplier, global: spec.Name, tasks: map[int32]*ProcessorContext{}}
		}})
	if err != nil {
		return err
	}
	src.addChild(n)
	return nil
}

// globalWriter is the processor below a global source: it names the store it keeps.
type globalWriter interface{ globalStore() string }

func (p *globalTableSource) globalStore() string { return p.store }

// globalStore is the store of an addGlobalStore processor; "" for others, which are no
// global writers.
func (p *userProcNode) globalStore() string { return p.global }
