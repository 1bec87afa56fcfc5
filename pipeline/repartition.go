package pipeline

import (
	"fmt"
	"regexp"
	"strings"
)

// Repartitioned configures an explicit repartition (Kafka Streams' Repartitioned).
type Repartitioned struct {
	Name          string
	Serdes        Serdes
	NumPartitions int32 // 0: the largest partition count among the topology's source topics
	Partitioner   StreamPartitioner
}

// Repartition re-routes each record to the partition Kafka Streams would write it to in the
// repartition topic (Kafka Streams' repartition()).
func (s *KStream) Repartition(r Repartitioned) (*KStream, error) {
	serdes := r.Serdes
	if serdes.Key == nil {
		serdes.Key = s.serdes.Key
	}
	if serdes.Value == nil {
		serdes.Value = s.serdes.Value
	}
	// A name takes no index (KStreamImpl#doRepartition uses it as it is).
	prefix := r.Name
	if prefix == "" {
		prefix = s.b.newName("KSTREAM-REPARTITION-", "")
	}
	src, err := s.b.addRepartition(s.node, prefix, s.b.orDefaults(serdes), r.NumPartitions, r.Partitioner)
	if err != nil {
		return nil, err
	}
	return s.derive(src, serdes, false), nil
}

var generatedName = regexp.MustCompile(`^KSTREAM.*-[0-9]{10}$`)

// addRepartition adds the nodes Kafka Streams adds for a repartition topic named
// <prefix>-repartition: parent → null-key filter → sink, and a source reading the topic.
// At run time the sink hands each record to the task of the source's sub-topology for the
// partition the record would have had in the topic, in memory (Topology.route), unless the
// topology writes the topic (TopologyOptions.RepartitionTopics).
// The graph keeps Kafka Streams' nodes and names so that `describe`, sub-topologies and
// generated names match.
func (b *StreamsBuilder) addRepartition(parent *Node, prefix string, serdes Serdes, partitions int32, partitioner StreamPartitioner) (*Node, error) {
	topic := prefix
	if !strings.HasSuffix(topic, "-repartition") {
		topic += "-repartition"
	}
	// Three indices are always consumed, in this order, as in Kafka Streams.
	sinkName := b.newName("KSTREAM-SINK-", "")
	filterName := b.newName("KSTREAM-FILTER-", "")
	sourceName := b.newName("KSTREAM-SOURCE-", "")
	if !generatedName.MatchString(prefix) {
		sinkName, filterName, sourceName = topic+"-sink", topic+"-filter", topic+"-source"
	}
	filter, err := b.addNode(&Node{Name: filterName, Kind: ProcessorNode, repartitionFilter: true})
	if err != nil {
		return nil, err
	}
	parent.addChild(filter)
	source, err := b.addNode(&Node{Name: sourceName, Kind: SourceNode, Topics: []string{topic}, Internal: true})
	if err != nil {
		return nil, err
	}
	sink, err := b.addNode(&Node{
		Name: sinkName, Kind: SinkNode, Topic: topic, Internal: true,
		sink: &sinkSpec{topic: topic, serdes: serdes, partitioner: partitioner, repartitionTo: source, partitions: partitions},
	})
	if err != nil {
		return nil, err
	}
	filter.addChild(sink)
	return source, nil
}

// nullKeyFilter drops records without a key before a repartition topic, as Kafka Streams'
// repartition filter does (StoatFlow counts them), unless a join downstream joins records
// with a null key: then the filter passes everything (InternalStreamsBuilder's
// rewriteRepartitionNodes).
type nullKeyFilter struct {
	ctx      *Context
	keepNull bool
}

func (p *nullKeyFilter) Init(ctx *Context) error { p.ctx = ctx; return nil }
func (p *nullKeyFilter) Process(rec Record) error {
	if rec.Key == nil && !p.keepNull {
		p.ctx.Drop(DropNullKey)
		return nil
	}
	return p.ctx.Forward(rec)
}

// relaxedDownstream reports whether a join that relaxes null keys is downstream of n,
// through repartition topics too (NodesWithRelaxedNullKeyJoinDownstream).
func relaxedDownstream(n *Node, memo map[*Node]bool) bool {
	if v, ok := memo[n]; ok {
		return v
	}
	memo[n] = false
	next := n.Children
	if n.Kind == SinkNode && n.sink.repartitionTo != nil {
		next = append(next[:len(next):len(next)], n.sink.repartitionTo)
	}
	relaxed := n.relaxesNullKeys
	for _, c := range next {
		relaxed = relaxedDownstream(c, memo) || relaxed
	}
	memo[n] = relaxed
	return relaxed
}

// repartitionForJoin is KStreamImpl#repartitionForJoin: the stream through a repartition
// topic <name>-repartition before a join. serdes default to the stream's. Joining the same
// stream again under its own name reuses the repartition, still taking the three indices.
func (s *KStream) repartitionForJoin(name string, serdes Serdes) (*KStream, error) {
	serdes = Serdes{Key: orSerde(serdes.Key, s.serdes.Key), Value: orSerde(serdes.Value, s.serdes.Value)}
	if s.joinRepartition != nil && name == s.node.Name {
		s.b.index += 3
		return s.derive(s.joinRepartition, serdes, false), nil
	}
	src, err := s.b.addRepartition(s.node, name, s.b.orDefaults(serdes), 0, nil)
	if err != nil {
		return nil, err
	}
	s.joinRepartition = src
	return s.derive(src, serdes, false), nil
}

// repartitionSink moves a record to the source of its repartition topic: to the task of the
// source's sub-topology (target) for the partition Kafka Streams would write it to, in
// memory, or, when the topology writes its internal topics (RepartitionTopics), through the
// topic itself.
type repartitionSink struct {
	ctx        *Context
	spec       *sinkSpec
	target     int
	partitions int32
	// physical is the topic's name with the application id, set when it is written.
	physical string
}

func (p *repartitionSink) Init(ctx *Context) error {
	p.ctx = ctx
	p.partitions = ctx.repartitionPartitions(p.spec.topic)
	if p.partitions <= 0 {
		return fmt.Errorf("repartition topic %s: unknown partition count", p.spec.topic)
	}
	if ctx.topology.throughTopics {
		p.physical = ctx.internalTopic(p.spec.topic)
	}
	return nil
}

// emit hands on a record whose partition is set.
func (p *repartitionSink) emit(rec Record) error {
	if p.physical != "" {
		return p.ctx.topology.sendInternal(p.ctx, p.spec.topic, rec)
	}
	return p.ctx.rekey(p.target, p.spec.topic, rec)
}

func (p *repartitionSink) Process(rec Record) error {
	if p.spec.route != nil {
		part, err := p.spec.route(p.ctx, rec)
		if err != nil {
			return err
		}
		rec.Partition = part
		return p.emit(rec)
	}
	if p.spec.partitioner != nil {
		parts, ok, err := p.spec.partitioner(p.spec.topic, rec, p.partitions)
		if err != nil {
			return fmt.Errorf("partitioner: %w", err)
		}
		if ok {
			if len(parts) == 0 {
				p.ctx.Drop(DropPartitioner)
			}
			for _, part := range parts {
				if part < 0 || part >= p.partitions {
					return fmt.Errorf("partitioner returned partition %d, but %s has %d partitions", part, p.spec.topic, p.partitions)
				}
				out := rec
				out.Partition = part
				if err := p.emit(out); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if p.physical != "" {
		return p.send(rec)
	}
	kb, err := p.spec.serdes.Key.Serialize(p.spec.topic, rec.Headers, rec.Key)
	if err != nil {
		return fmt.Errorf("serialize key for %s: %w", p.spec.topic, err)
	}
	if kb != nil {
		rec.Partition = DefaultPartition(kb, p.partitions)
	}
	return p.ctx.rekey(p.target, p.spec.topic, rec)
}

// send writes a record of the default partitioning to the topic: the key serialised once,
// for its partition and its bytes. A record without a key (a join downstream takes them)
// keeps its partition, within the topic's.
func (p *repartitionSink) send(rec Record) error {
	t := p.ctx.topology
	key, value, err := t.internal[p.spec.topic].encode(p.ctx, p.physical, rec)
	if err != nil {
		return err
	}
	if key != nil {
		rec.Partition = DefaultPartition(key, p.partitions)
	} else {
		rec.Partition %= p.partitions
	}
	return t.collector.Send(p.physical, rec.Partition, key, value, rec.Headers, rec.Timestamp, t.input)
}
