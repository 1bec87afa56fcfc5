package pipeline

import (
	"encoding/binary"
	"fmt"
)

// ValueJoinerWithKey joins a stream value with a table value (nil when absent in a left
// join); the key is the stream record's.
type ValueJoinerWithKey func(rec Record, tableValue any) (any, error)

// Joined configures a stream-table join (Kafka Streams' Joined): Name names the join
// processor and, after a key change, the repartition topic; Serdes serialise the
// repartitioned stream (default: the stream's). With HasGracePeriod, a join against a
// versioned table waits GracePeriod ms of stream time for late table updates
// (withGracePeriod, KIP-923). OtherValueSerde is the table's value serde
// (Joined.otherValueSerde): the join reads the table's values as the table holds them and
// never serialises them, as in Kafka Streams, which ignores it, so it may only name the
// serde the table is known to have.
type Joined struct {
	Name            string
	Serdes          Serdes
	OtherValueSerde Serde
	HasGracePeriod  bool
	GracePeriod     int64
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
// table's key; the stream and the table must be co-partitioned. A versioned table is read
// as of each stream record's timestamp. A grace period adds the buffer store
// <processor>-Buffer, listed with the table's stores.
func (s *KStream) joinTable(t *KTable, joiner ValueJoinerWithKey, left bool, j Joined) (*KStream, error) {
	if t == nil || t.b != s.b {
		return nil, fmt.Errorf("join: the table must come from the same builder")
	}
	if o, v := j.OtherValueSerde, t.serdes.Value; o != nil && v != nil && o.Name() != v.Name() {
		return nil, fmt.Errorf("join: otherValueSerde %s contradicts the table's value serde %s: a stream-table join reads the table's values with the table's own serde", o.Name(), v.Name())
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
	if j.HasGracePeriod {
		switch {
		case rows.at == nil:
			return nil, kafkaMessage("KTable must be versioned to use a grace period in a stream table join.")
		case j.GracePeriod < 0:
			return nil, fmt.Errorf("join: the grace period must not be negative, not %d ms", j.GracePeriod)
		case rows.historyRetention < j.GracePeriod:
			return nil, kafkaMessage("History retention must be at least grace period.")
		}
	}
	prefix := "KSTREAM-JOIN-"
	if left {
		prefix = "KSTREAM-LEFTJOIN-"
	}
	proc := &streamTableJoin{rows: rows, joiner: joiner, left: left}
	n, err := s.processor(prefix, j.Name, func() Processor {
		p := *proc
		p.bufferTime = map[int32]int64{}
		return &p
	})
	if err != nil {
		return nil, err
	}
	n.Stores = rows.stores
	if j.HasGracePeriod {
		proc.buffer, proc.grace, proc.serdes = n.Name+"-Buffer", j.GracePeriod, s.b.orDefaults(s.serdes)
		if err := s.b.AddStateStore(StoreSpec{Name: proc.buffer, Type: KeyValueStoreType, Logged: true,
			Serdes: Serdes{Key: rawBytesSerde{}, Value: rawBytesSerde{}}, OwnLayout: "the grace buffer's values (the suppression buffer's layout, not Kafka's RocksDBTimeOrderedKeyValueBuffer's)"}); err != nil {
			return nil, fmt.Errorf("join: %w", err)
		}
		n.Stores = append(append([]string(nil), rows.stores...), proc.buffer)
	}
	n.relaxesNullKeys = left
	s.b.copartition(s.node, t.node)
	return s.derive(n, Serdes{Key: orSerde(j.Serdes.Key, s.serdes.Key)}, false), nil
}

// streamTableJoin is KStreamKTableJoinProcessor: inner joins drop records with a null key or
// value (counted); left joins drop only null values and join a null key with a null table
// value (KIP-962). Table updates never emit. A versioned table is read as of the record's
// timestamp. With a grace period, records wait in a time-ordered buffer until the buffer's
// stream time (its largest timestamp) is grace ms past them, then join in timestamp order
// with their own timestamps and context (RocksDBTimeOrderedKeyValueBuffer); a record
// already that late joins at once.
type streamTableJoin struct {
	ctx    *Context
	rows   *tableGetter
	joiner ValueJoinerWithKey
	left   bool
	// buffer is the grace buffer store ("" without a grace period): keys
	// [8-byte ts][key bytes][4-byte seqnum], values the record and its context in the layout
	// of a suppression buffer entry.
	buffer     string
	grace      int64
	serdes     Serdes
	bufferTime map[int32]int64 // by partition, once known
	seqnum     uint32
}

func (p *streamTableJoin) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *streamTableJoin) Process(rec Record) error {
	if rec.Value == nil {
		p.ctx.Drop(DropNullValue)
		return nil
	}
	if rec.Key == nil && !p.left {
		p.ctx.Drop(DropNullKey)
		return nil
	}
	if p.buffer == "" || rec.Key == nil {
		return p.join(rec)
	}
	return p.delay(rec)
}

func (p *streamTableJoin) join(rec Record) error {
	var tableValue any
	if rec.Key != nil {
		var v any
		var found bool
		var err error
		if p.rows.at != nil {
			v, _, found, err = p.rows.at(p.ctx, rec, rec.Key, rec.Timestamp)
		} else {
			v, _, found, err = p.rows.get(p.ctx, rec, rec.Key)
		}
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

// delay buffers rec, or joins it at once when the buffer's stream time is already more
// than grace ms past it, then joins every buffered record grace ms behind.
func (p *streamTableJoin) delay(rec Record) error {
	store, err := p.ctx.store(p.buffer, rec.Partition)
	if err != nil {
		return err
	}
	bt, known := p.bufferTime[rec.Partition]
	if !known {
		if bt, known, err = lastBufferedTime(store); err != nil {
			return err
		}
	}
	if known && bt-p.grace > rec.Timestamp {
		return p.join(rec)
	}
	kb, err := p.serdes.Key.Serialize(rec.Topic, rec.Headers, rec.Key)
	if err != nil {
		return fmt.Errorf("join buffer key: %w", err)
	}
	vb, err := p.serdes.Value.Serialize(rec.Topic, rec.Headers, rec.Value)
	if err != nil {
		return fmt.Errorf("join buffer value: %w", err)
	}
	p.seqnum = (p.seqnum + 1) & 0x7FFFFFFF
	key := binary.BigEndian.AppendUint64(make([]byte, 0, 12+len(kb)), uint64(rec.Timestamp))
	key = binary.BigEndian.AppendUint32(append(key, kb...), p.seqnum)
	entry := bufferedChange{Timestamp: rec.Timestamp, Offset: rec.Offset, Topic: rec.Topic, Partition: rec.Partition,
		Headers: rec.Headers, New: vb, BufferTime: rec.Timestamp}
	if err := store.Put(key, entry.encode(), rec.Timestamp); err != nil {
		return err
	}
	if !known || rec.Timestamp > bt {
		bt = rec.Timestamp
	}
	p.bufferTime[rec.Partition] = bt
	return p.evict(store, bt-p.grace)
}

// lastBufferedTime is the largest timestamp in a partition's buffer, which stands for the
// buffer's stream time after a restart.
func lastBufferedTime(store *KeyValueStore) (int64, bool, error) {
	it, err := store.Range(nil, nil, true)
	if err != nil {
		return 0, false, err
	}
	defer it.Close()
	if !it.Next() {
		return 0, false, it.Err()
	}
	k, _ := it.Key().([]byte)
	if len(k) < 12 {
		return 0, false, fmt.Errorf("join buffer %s: corrupt key", store.Name())
	}
	return int64(binary.BigEndian.Uint64(k)), true, nil
}

// evict joins and removes, in timestamp order, every buffered record at or before upTo.
func (p *streamTableJoin) evict(store *KeyValueStore, upTo int64) error {
	type buffered struct{ key, value []byte }
	var due []buffered
	it, err := store.Range(nil, nil, false)
	if err != nil {
		return err
	}
	for it.Next() {
		k, _ := it.Key().([]byte)
		v, _ := it.Value().([]byte)
		if len(k) < 12 {
			it.Close()
			return fmt.Errorf("join buffer %s: corrupt key", p.buffer)
		}
		if int64(binary.BigEndian.Uint64(k)) > upTo {
			break
		}
		due = append(due, buffered{k, v})
	}
	err = it.Err()
	it.Close()
	if err != nil {
		return err
	}
	for _, b := range due {
		e, err := decodeBufferedChange(b.value)
		if err != nil {
			return fmt.Errorf("join buffer %s: %w", p.buffer, err)
		}
		key, err := p.serdes.Key.Deserialize(e.Topic, e.Headers, b.key[8:len(b.key)-4])
		if err != nil {
			return fmt.Errorf("join buffer key: %w", err)
		}
		value, err := p.serdes.Value.Deserialize(e.Topic, e.Headers, e.New)
		if err != nil {
			return fmt.Errorf("join buffer value: %w", err)
		}
		if _, err := store.Delete(b.key, e.Timestamp); err != nil {
			return err
		}
		rec := Record{Key: key, Value: value, Timestamp: e.Timestamp, Headers: e.Headers, Topic: e.Topic, Partition: e.Partition, Offset: e.Offset}
		if err := p.join(rec); err != nil {
			return err
		}
	}
	return nil
}
