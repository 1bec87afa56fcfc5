package pipeline

import "fmt"

// ValueJoinerWithKey joins a stream value with a table value (nil when absent in a left
// join); the key is the stream record's.
type ValueJoinerWithKey func(rec Record, tableValue any) (any, error)

// Joined configures a stream-table join (Kafka Streams' Joined): Name names the join
// processor and, after a key change, the repartition topic; Serdes serialise the
// repartitioned stream (default: the stream's).
type Joined struct {
	Name   string
	Serdes Serdes
}

// Join joins each stream record with the table's current value for its key (Kafka Streams'
// KStream#join(KTable)); records without a table value produce nothing.
func (s *KStream) Join(t *KTable, joiner ValueJoinerWithKey, j Joined) (*KStream, error) {
	return s.joinTable(t, joiner, false, j)
}

// LeftJoin is Join that also emits stream records without a table value (table value nil).
func (s *KStream) LeftJoin(t *KTable, joiner ValueJoinerWithKey, j Joined) (*KStream, error) {
	return s.joinTable(t, joiner, true, j)
}

// joinTable is KStreamImpl#join(KTable): after a key change the stream is repartitioned
// first, into <Joined name or the stream's node>-repartition, to the partition of the
// table's key; the stream and the table must be co-partitioned.
func (s *KStream) joinTable(t *KTable, joiner ValueJoinerWithKey, left bool, j Joined) (*KStream, error) {
	if t == nil || t.b != s.b {
		return nil, fmt.Errorf("join: the table must come from the same builder")
	}
	if s.keyChanged {
		prefix := j.Name
		if prefix == "" {
			prefix = s.node.Name
		}
		rs, err := s.repartitionForJoin(prefix, j.Serdes)
		if err != nil {
			return nil, err
		}
		s = rs
	}
	rows, err := t.getter()
	if err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	prefix := "KSTREAM-JOIN-"
	if left {
		prefix = "KSTREAM-LEFTJOIN-"
	}
	n, err := s.processor(prefix, j.Name, func() Processor { return &streamTableJoin{rows: rows, joiner: joiner, left: left} })
	if err != nil {
		return nil, err
	}
	n.Stores = rows.stores
	n.relaxesNullKeys = left
	s.b.copartition(s.node, t.node)
	return s.derive(n, Serdes{Key: orSerde(j.Serdes.Key, s.serdes.Key)}, false), nil
}

// streamTableJoin is KStreamKTableJoinProcessor: inner joins drop records with a null key or
// value (counted); left joins drop only null values and join a null key with a null table
// value (KIP-962). Table updates never emit.
type streamTableJoin struct {
	ctx    *Context
	rows   *tableGetter
	joiner ValueJoinerWithKey
	left   bool
}

func (p *streamTableJoin) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *streamTableJoin) Process(rec Record) error {
	if rec.Value == nil {
		p.ctx.Drop(DropNullValue)
		return nil
	}
	var tableValue any
	if rec.Key == nil {
		if !p.left {
			p.ctx.Drop(DropNullKey)
			return nil
		}
	} else {
		v, _, found, err := p.rows.get(p.ctx, rec, rec.Key)
		if err != nil {
			return err
		}
		if found {
			tableValue = v
		}
	}
	if tableValue == nil && !p.left {
		return nil
	}
	out, err := p.joiner(rec, tableValue)
	if err != nil {
		return err
	}
	rec.Value = out
	return p.ctx.Forward(rec)
}
