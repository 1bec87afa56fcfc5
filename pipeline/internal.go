package pipeline

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Kafka Streams writes re-keyed records to internal topics (repartition topics, a
// foreign-key join's registration and response topics) and reads them back in another
// sub-topology. StoatFlow routes them in memory (repartition.go) unless the topology is
// built with TopologyOptions.RepartitionTopics (the agents of a streams group): then its
// repartition sinks write them to those topics as Kafka Streams does, and whoever runs the
// topology reads them back and hands them to ProcessInternal. An application moved from
// Kafka Streams to StoatFlow may find records there that Kafka Streams wrote and had not
// processed when it stopped: the agent hands them to ProcessInternal before anything else
// (docs/scaling.md).

// InternalTopic is an internal topic of the topology.
type InternalTopic struct {
	// Name is the topic's name without the application id, as describe() prints it.
	Name string
	// Partitions is the partition count Kafka Streams gives it.
	Partitions int32
	// Subtopology reads it: partition p's records go to task <Subtopology>_p.
	Subtopology int
}

// internalSource is the sub-topology whose tasks read an internal topic, how its bytes
// become the record the in-memory route would have handed over, and how that record
// becomes the bytes Kafka Streams writes.
type internalSource struct {
	sub    int
	decode func(ctx *Context, in *SourceRecord) (Record, error)
	encode func(ctx *Context, topic string, rec Record) (key, value []byte, err error)
}

// InternalTopics are the topology's internal topics, in the order their sinks were added.
func (t *Topology) InternalTopics() []InternalTopic {
	out := make([]InternalTopic, 0, len(t.internalOrder))
	for _, name := range t.internalOrder {
		out = append(out, InternalTopic{Name: name, Partitions: t.repartitionPartitions[name], Subtopology: t.internal[name].sub})
	}
	return out
}

// ProcessInternal runs a record a Kafka Streams instance of the application wrote to the
// internal topic name (without the application id) through the task that reads it, the one
// of the partition it was written to, which must run on this topology: what the in-memory
// route would have handed over. Its record context names the internal topic and offset, as
// in Kafka Streams; then Drain.
func (t *Topology) ProcessInternal(name string, in *SourceRecord) error {
	src, ok := t.internal[name]
	var err error
	switch {
	case !ok:
		err = fmt.Errorf("%s is no internal topic of this topology", name)
	}
	var id TaskID
	var k *Task
	if err == nil {
		id = TaskID{Subtopology: src.sub, Partition: in.Partition}
		k, err = t.task(id)
	}
	if err == nil && k == nil {
		err = fmt.Errorf("task %s does not run on this topology", id)
	}
	var rec Record
	if err == nil {
		rec, err = src.decode(k.sources[name].ctx, in)
	}
	if err != nil {
		return &RecordError{Topic: in.Topic, Partition: in.Partition, Offset: in.Offset, Err: err}
	}
	return t.ProcessRekeyed(&Rekeyed{Task: id, Topic: name, Record: rec, Origin: in})
}

// addInternal registers the internal topic of a sink that routes in memory.
func (t *Topology) addInternal(spec *sinkSpec, sub int) {
	if t.internal == nil {
		t.internal = map[string]*internalSource{}
	}
	if _, dup := t.internal[spec.topic]; dup {
		// A stream joined again under its own name reuses its repartition topic.
		return
	}
	src := &internalSource{sub: sub, decode: spec.decodeInternal, encode: spec.encodeInternal}
	if src.decode == nil {
		src.decode, src.encode = spec.serdes.decodeInternal, spec.serdes.encodeInternal
	}
	t.internal[spec.topic] = src
	t.internalOrder = append(t.internalOrder, spec.topic)
}

// sendInternal writes a record of the internal topic name (without the application id) to
// its partition rec.Partition as Kafka Streams does, in the epoch of the record being
// processed: whoever runs the topology reads it back and hands it to ProcessInternal.
func (t *Topology) sendInternal(ctx *Context, name string, rec Record) error {
	topic := t.appID + "-" + name
	key, value, err := t.internal[name].encode(ctx, topic, rec)
	if err != nil {
		return err
	}
	return t.collector.Send(topic, rec.Partition, key, value, rec.Headers, rec.Timestamp, t.input)
}

// encodeInternal writes a repartition record: key and value in the repartition's serdes.
func (s Serdes) encodeInternal(_ *Context, topic string, rec Record) ([]byte, []byte, error) {
	key, err := s.Key.Serialize(topic, rec.Headers, rec.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("serialize key for %s: %w", topic, err)
	}
	value, err := s.Value.Serialize(topic, rec.Headers, rec.Value)
	if err != nil {
		return nil, nil, fmt.Errorf("serialize value for %s: %w", topic, err)
	}
	return key, value, nil
}

// encodeSubscription writes a registration record as decodeSubscription reads it: the foreign
// key in the other table's key serde, the subscription in SubscriptionWrapperSerde's layout.
func (s *fkJoinSpec) encodeSubscription(ctx *Context, topic string, rec Record) ([]byte, []byte, error) {
	var key []byte
	if rec.Key != nil {
		var err error
		if key, err = s.otherKeys.Serialize(topic, rec.Headers, rec.Key); err != nil {
			return nil, nil, fmt.Errorf("serialize foreign key for %s: %w", topic, err)
		}
	}
	sub := rec.Value.(*fkSubscription)
	pk, err := s.primaryKeyBytes(ctx, rec.Headers, sub.pk)
	if err != nil {
		return nil, nil, err
	}
	return key, appendSubscription(nil, sub, pk), nil
}

// encodeResponse writes a response record as decodeResponse reads it
// (SubscriptionResponseWrapperSerde, version 0): the primary key in this table's key serde,
// then the version byte (its top bit set when there is no hash), the hash, and the other
// table's value in its serde (nothing for none).
func (s *fkJoinSpec) encodeResponse(_ *Context, topic string, rec Record) ([]byte, []byte, error) {
	key, err := s.thisKeys.Serialize(topic, rec.Headers, rec.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("serialize primary key for %s: %w", topic, err)
	}
	resp := rec.Value.(*fkResponse)
	value := []byte{0}
	if resp.hash == nil {
		value[0] |= 0x80
	} else {
		value = binary.BigEndian.AppendUint64(value, resp.hash[0])
		value = binary.BigEndian.AppendUint64(value, resp.hash[1])
	}
	if resp.foreign != nil {
		fv, err := s.otherValues.Serialize(topic, rec.Headers, resp.foreign)
		if err != nil {
			return nil, nil, fmt.Errorf("serialize foreign value for %s: %w", topic, err)
		}
		value = append(value, fv...)
	}
	return key, value, nil
}

// decodeInternal reads a repartition record: key and value in the repartition's serdes.
func (s Serdes) decodeInternal(_ *Context, in *SourceRecord) (Record, error) {
	rec := internalRecord(in)
	var err error
	if rec.Key, err = s.Key.Deserialize(in.Topic, in.Headers, in.Key); err != nil {
		return rec, &DeserializationError{Part: "key", Err: err}
	}
	if rec.Value, err = s.Value.Deserialize(in.Topic, in.Headers, in.Value); err != nil {
		return rec, &DeserializationError{Part: "value", Err: err}
	}
	return rec, nil
}

func internalRecord(in *SourceRecord) Record {
	return Record{Timestamp: in.Timestamp, Headers: in.Headers, Topic: in.Topic, Partition: in.Partition, Offset: in.Offset}
}

var errNotSubscription = errors.New("not a SubscriptionWrapper of version 1")

// decodeSubscription reads a registration record (SubscriptionWrapperSerde, version 1): the
// key is the foreign key, the value the subscription with its primary key.
func (s *fkJoinSpec) decodeSubscription(ctx *Context, in *SourceRecord) (Record, error) {
	rec := internalRecord(in)
	var err error
	if in.Key != nil {
		if rec.Key, err = s.otherKeys.Deserialize(in.Topic, in.Headers, in.Key); err != nil {
			return rec, &DeserializationError{Part: "key", Err: err}
		}
	}
	b := in.Value
	if len(b) < 2+4 || b[0]&0x7f != subscriptionWrapperVersion {
		return rec, &DeserializationError{Part: "value", Err: errNotSubscription}
	}
	sub := &fkSubscription{ins: fkInstruction(b[1])}
	if sub.ins > propagateOnlyIfValue {
		return rec, &DeserializationError{Part: "value", Err: fmt.Errorf("unknown instruction %d: %w", b[1], errNotSubscription)}
	}
	pk := b[2:]
	if b[0]&0x80 == 0 {
		if len(b) < 2+16+4 {
			return rec, &DeserializationError{Part: "value", Err: errNotSubscription}
		}
		sub.hash = &[2]uint64{binary.BigEndian.Uint64(b[2:]), binary.BigEndian.Uint64(b[10:])}
		pk = b[18:]
	}
	sub.partition = int32(binary.BigEndian.Uint32(pk[len(pk)-4:]))
	if sub.pk, err = s.thisKeys.Deserialize(ctx.internalTopic(s.registration)+"-pk", in.Headers, pk[:len(pk)-4]); err != nil {
		return rec, &DeserializationError{Part: "value", Err: fmt.Errorf("primary key: %w", err)}
	}
	rec.Value = sub
	return rec, nil
}

// decodeResponse reads a response record (SubscriptionResponseWrapperSerde, version 0): the
// key is the primary key, the value the hash it answers and the other table's value (none
// when empty, as Kafka Streams reads it).
func (s *fkJoinSpec) decodeResponse(_ *Context, in *SourceRecord) (Record, error) {
	rec := internalRecord(in)
	var err error
	if rec.Key, err = s.thisKeys.Deserialize(in.Topic, in.Headers, in.Key); err != nil {
		return rec, &DeserializationError{Part: "key", Err: err}
	}
	b := in.Value
	if len(b) < 1 || b[0]&0x7f != 0 {
		return rec, &DeserializationError{Part: "value", Err: errors.New("not a SubscriptionResponseWrapper of version 0")}
	}
	resp := &fkResponse{partition: in.Partition}
	b = b[1:]
	if in.Value[0]&0x80 == 0 {
		if len(b) < 16 {
			return rec, &DeserializationError{Part: "value", Err: errors.New("SubscriptionResponseWrapper: hash cut short")}
		}
		resp.hash = &[2]uint64{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}
		b = b[16:]
	}
	if len(b) > 0 {
		if resp.foreign, err = s.otherValues.Deserialize(in.Topic, in.Headers, b); err != nil {
			return rec, &DeserializationError{Part: "value", Err: fmt.Errorf("foreign value: %w", err)}
		}
	}
	rec.Value = resp
	return rec, nil
}
