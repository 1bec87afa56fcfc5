package pipeline

import "fmt"

type sinkSpec struct {
	topic     string
	extractor TopicNameExtractor
	// extractorName is how describe() names a topic extractor (Java prints its class).
	extractorName string
	serdes        Serdes
	partitioner   StreamPartitioner
	// repartitionTo is the in-memory source of a repartition topic, with the topic's
	// partition count (0: the largest source partition count).
	repartitionTo *Node
	partitions    int32
	// route, when set, picks the partition of each record in the repartition topic instead
	// of the partitioner and the key (a foreign-key join's topics).
	route func(ctx *Context, rec Record) (int32, error)
	// decodeInternal reads a record Kafka Streams wrote to the topic, and encodeInternal
	// writes one as Kafka Streams does, when the serdes do not (internal.go).
	decodeInternal func(ctx *Context, in *SourceRecord) (Record, error)
	encodeInternal func(ctx *Context, topic string, rec Record) (key, value []byte, err error)
}

type sinkProc struct {
	ctx  *Context
	spec *sinkSpec
}

func (p *sinkProc) Init(ctx *Context) error {
	p.ctx = ctx
	return nil
}

func (p *sinkProc) Process(rec Record) error {
	if p.ctx.node.tap != nil {
		p.ctx.node.tap(rec)
	}
	topic := p.spec.topic
	if p.spec.extractor != nil {
		var err error
		if topic, err = p.spec.extractor(rec); err != nil {
			return fmt.Errorf("topic extractor: %w", err)
		}
		if topic == "" {
			return fmt.Errorf("topic extractor returned an empty topic name")
		}
	}
	kb, err := p.spec.serdes.Key.Serialize(topic, rec.Headers, rec.Key)
	if err != nil {
		return fmt.Errorf("serialize key for topic %s: %w", topic, err)
	}
	vb, err := p.spec.serdes.Value.Serialize(topic, rec.Headers, rec.Value)
	if err != nil {
		return fmt.Errorf("serialize value for topic %s: %w", topic, err)
	}
	if p.spec.partitioner == nil {
		return p.send(topic, -1, kb, vb, rec)
	}
	n, err := p.ctx.PartitionsFor(topic)
	if err != nil {
		return err
	}
	parts, ok, err := p.spec.partitioner(topic, rec, n)
	if err != nil {
		return fmt.Errorf("partitioner: %w", err)
	}
	if !ok {
		return p.send(topic, -1, kb, vb, rec)
	}
	if len(parts) == 0 {
		p.ctx.Drop(DropPartitioner)
		return nil
	}
	for _, part := range parts {
		if part < 0 || part >= n {
			return fmt.Errorf("partitioner returned partition %d, but topic %s has %d partitions", part, topic, n)
		}
		if err := p.send(topic, part, kb, vb, rec); err != nil {
			return err
		}
	}
	return nil
}

// send writes one record. Without an explicit partition, a non-null key goes to the
// partition Kafka's producer would pick (murmur2 of the key bytes); a null key lets the
// producer choose.
func (p *sinkProc) send(topic string, partition int32, kb, vb []byte, rec Record) error {
	if partition < 0 && kb != nil {
		n, err := p.ctx.PartitionsFor(topic)
		if err != nil {
			return err
		}
		partition = DefaultPartition(kb, n)
	}
	return p.ctx.send(topic, partition, kb, vb, rec.Headers, rec.Timestamp)
}
