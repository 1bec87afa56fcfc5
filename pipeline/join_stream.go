package pipeline

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
)

// JoinWindows bound a stream-stream join (Kafka Streams' JoinWindows): a left record at l
// joins a right record at r iff l − Before ≤ r ≤ l + After. Times are milliseconds.
type JoinWindows struct {
	Before int64
	After  int64
	Grace  int64
	// SpuriousResultFixOff marks windows built with the deprecated JoinWindows.of and grace:
	// Kafka Streams keeps its fix of spurious left/outer join results (KAFKA-10847) off for
	// them (KAFKA-12909), so a record without a partner yet is joined with nil at once, and
	// joined again when a partner arrives later.
	SpuriousResultFixOff bool
}

// DeprecatedJoinWindows is JoinWindows.of(d): before = after = d, the old default grace
// of 24 hours minus the window size (at least 0), and the spurious-result fix off.
func DeprecatedJoinWindows(d int64) JoinWindows {
	return JoinWindows{Before: d, After: d, Grace: max(deprecatedDefaultGrace-2*d, 0), SpuriousResultFixOff: true}
}

// deprecatedDefaultGrace is Windows.DEPRECATED_DEFAULT_24_HR_GRACE_PERIOD.
const deprecatedDefaultGrace = 24 * 60 * 60 * 1000

// Validate applies Kafka Streams' checks: before + after ≥ 0, grace ≥ 0.
func (w JoinWindows) Validate() error {
	switch {
	case w.Before+w.After < 0:
		return fmt.Errorf("join window interval (before + after = %d ms) must not be negative", w.Before+w.After)
	case w.Grace < 0:
		return fmt.Errorf("join window grace period must not be negative, not %d", w.Grace)
	}
	return nil
}

// StreamJoined configures a stream-stream join (Kafka Streams' StreamJoined): Name names
// its processors, StoreName its stores; the serdes are the stores' (and a repartition's),
// defaulting to each stream's; ThisStore and OtherStore are window store suppliers
// (withThisStoreSupplier, withOtherStoreSupplier) whose names the stores take.
type StreamJoined struct {
	Name            string
	StoreName       string
	Serdes          Serdes // key, and this stream's values
	OtherValueSerde Serde
	ThisStore       *WindowStoreSupplier
	OtherStore      *WindowStoreSupplier
	LoggingDisabled bool
	TopicConfig     map[string]string // withLoggingEnabled(Map)
}

// WindowStoreSupplier is Stores.persistentWindowStore(name, retention, windowSize,
// retainDuplicates) given to a StreamJoined; times are milliseconds.
type WindowStoreSupplier struct {
	Name             string
	Retention        int64
	WindowSize       int64
	RetainDuplicates bool
}

// check is KStreamImplJoin#assertWindowSettings.
func (s *WindowStoreSupplier) check(w JoinWindows) error {
	if !s.RetainDuplicates {
		return fmt.Errorf("the store supplier %q must set retainDuplicates=true, found retainDuplicates=false", s.Name)
	}
	if s.Retention != w.Before+w.After+w.Grace || s.WindowSize != w.Before+w.After {
		return fmt.Errorf("window settings mismatch: the store supplier %q (retention %d ms, window size %d ms) must match the join windows "+
			"(retention = before + after + grace = %d ms, window size = before + after = %d ms)",
			s.Name, s.Retention, s.WindowSize, w.Before+w.After+w.Grace, w.Before+w.After)
	}
	return nil
}

// StreamValueJoiner joins a left and a right value; one of them is nil for the non-joined
// results of left and outer joins. rec carries the key and the record context.
type StreamValueJoiner func(rec Record, left, right any) (any, error)

// StreamJoinKind tells inner, left and outer stream-stream joins apart.
type StreamJoinKind int

const (
	InnerStreamJoin StreamJoinKind = iota
	LeftStreamJoin
	OuterStreamJoin
)

// JoinStream joins this stream with other within the join windows (Kafka Streams'
// KStream#join/leftJoin/outerJoin(KStream, ValueJoiner, JoinWindows, StreamJoined)).
func (s *KStream) JoinStream(other *KStream, kind StreamJoinKind, joiner StreamValueJoiner, w JoinWindows, opts StreamJoined) (*KStream, error) {
	if other == nil || other.b != s.b {
		return nil, fmt.Errorf("join: the other stream must come from the same builder")
	}
	if err := w.Validate(); err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	for _, sup := range []*WindowStoreSupplier{opts.ThisStore, opts.OtherStore} {
		if sup == nil {
			continue
		}
		if err := sup.check(w); err != nil {
			return nil, fmt.Errorf("join: %w", err)
		}
	}
	if opts.ThisStore != nil && opts.OtherStore != nil && opts.ThisStore.Name == opts.OtherStore.Name {
		return nil, fmt.Errorf("join: both store suppliers are named %q; store suppliers must have unique names", opts.ThisStore.Name)
	}
	b := s.b
	// KStreamImpl#doJoin: a re-keyed side is repartitioned first, into
	// <name>-left-repartition / <name>-right-repartition, or after its own node.
	if s.keyChanged {
		prefix := s.node.Name
		if opts.Name != "" {
			prefix = opts.Name + "-left"
		}
		rs, err := s.repartitionForJoin(prefix, opts.Serdes)
		if err != nil {
			return nil, err
		}
		s = rs
	}
	if other.keyChanged {
		prefix := other.node.Name
		if opts.Name != "" {
			prefix = opts.Name + "-right"
		}
		ro, err := other.repartitionForJoin(prefix, Serdes{Key: opts.Serdes.Key, Value: opts.OtherValueSerde})
		if err != nil {
			return nil, err
		}
		other = ro
	}
	b.copartition(s.node, other.node)
	thisOuter, otherOuter := kind == OuterStreamJoin, kind != InnerStreamJoin
	suffixed := func(suffix string) string {
		if opts.Name == "" {
			return ""
		}
		return opts.Name + suffix
	}
	thisWindowedName := b.newName("KSTREAM-WINDOWED-", suffixed("-this-windowed"))
	otherWindowedName := b.newName("KSTREAM-WINDOWED-", suffixed("-other-windowed"))
	thisPrefix, thisSuffix := "KSTREAM-JOINTHIS-", "-this-join"
	if thisOuter {
		thisPrefix, thisSuffix = "KSTREAM-OUTERTHIS-", "-outer-this-join"
	}
	otherPrefix, otherSuffix := "KSTREAM-JOINOTHER-", "-other-join"
	if otherOuter {
		otherPrefix, otherSuffix = "KSTREAM-OUTEROTHER-", "-outer-other-join"
	}
	thisIndex := b.index
	thisGenerated := b.newName(thisPrefix, "")
	otherGenerated := b.newName(otherPrefix, "")
	thisJoinName, otherJoinName := thisGenerated, otherGenerated
	if opts.Name != "" {
		thisJoinName, otherJoinName = opts.Name+thisSuffix, opts.Name+otherSuffix
	}
	thisStore, otherStore := thisGenerated+"-store", otherGenerated+"-store"
	bufferStore := fmt.Sprintf("KSTREAM-OUTERSHARED-%010d-store", thisIndex)
	// OuterStreamJoinStoreFactory: a named this-side supplier names the buffer, else the
	// store name.
	bufferBase := opts.StoreName
	if opts.ThisStore != nil {
		bufferBase = opts.ThisStore.Name
	}
	if opts.StoreName != "" {
		thisStore, otherStore = opts.StoreName+thisSuffix+"-store", opts.StoreName+otherSuffix+"-store"
	}
	if bufferBase != "" {
		bufferStore = bufferBase + "-left-shared-join-store"
		if thisOuter {
			bufferStore = bufferBase + "-outer-shared-join-store"
		}
	}
	if opts.ThisStore != nil {
		thisStore = opts.ThisStore.Name
	}
	if opts.OtherStore != nil {
		otherStore = opts.OtherStore.Name
	}
	mergeName := b.newName("KSTREAM-MERGE-", suffixed("-merge"))

	thisSerdes := b.orDefaults(Serdes{Key: orSerde(opts.Serdes.Key, s.serdes.Key), Value: orSerde(opts.Serdes.Value, s.serdes.Value)})
	otherSerdes := b.orDefaults(Serdes{Key: thisSerdes.Key, Value: orSerde(opts.OtherValueSerde, other.serdes.Value)})
	size := max(w.Before+w.After, 1) // the store needs a positive window size
	for _, spec := range []StoreSpec{
		{Name: thisStore, Serdes: thisSerdes},
		{Name: otherStore, Serdes: otherSerdes},
	} {
		spec.Type, spec.Logged, spec.RetainDuplicates, spec.TopicConfig = WindowStoreType, !opts.LoggingDisabled, true, opts.TopicConfig
		spec.WindowSize, spec.Retention = size, max(w.Before+w.After+w.Grace, size)
		if err := b.AddStateStore(spec); err != nil {
			return nil, fmt.Errorf("join: %w", err)
		}
	}
	sh := &streamJoinShared{windows: w, joiner: joiner,
		keySerde: thisSerdes.Key, leftValues: thisSerdes.Value, rightValues: otherSerdes.Value}
	// Without the spurious-result fix Kafka Streams adds no outer-join buffer.
	if kind != InnerStreamJoin && !w.SpuriousResultFixOff {
		sh.buffer = bufferStore
		if err := b.AddStateStore(StoreSpec{Name: bufferStore, Type: KeyValueStoreType, Logged: !opts.LoggingDisabled, TopicConfig: opts.TopicConfig,
			Serdes: Serdes{Key: rawBytesSerde{}, Value: rawBytesSerde{}}, OwnLayout: "the outer-join buffer's values (a list of length-prefixed values, not Kafka's ListSerde)"}); err != nil {
			return nil, fmt.Errorf("join: %w", err)
		}
	}

	add := func(parent *Node, name string, stores []string, factory func() Processor) (*Node, error) {
		n, err := b.addNode(&Node{Name: name, Kind: ProcessorNode, factory: factory, Stores: stores})
		if err != nil {
			return nil, err
		}
		parent.addChild(n)
		return n, nil
	}
	thisWindowed, err := add(s.node, thisWindowedName, []string{thisStore}, func() Processor { return &joinWindowProc{store: thisStore} })
	if err != nil {
		return nil, err
	}
	otherWindowed, err := add(other.node, otherWindowedName, []string{otherStore}, func() Processor { return &joinWindowProc{store: otherStore} })
	if err != nil {
		return nil, err
	}
	thisWindowed.relaxesNullKeys, otherWindowed.relaxesNullKeys = otherOuter, otherOuter
	joinStores := func(store string) []string {
		if sh.buffer == "" {
			return []string{store}
		}
		return []string{store, sh.buffer}
	}
	thisJoin, err := add(thisWindowed, thisJoinName, joinStores(otherStore), func() Processor {
		return &streamJoinSide{sh: sh, otherStore: otherStore, partner: otherJoinName, left: true, outer: otherOuter}
	})
	if err != nil {
		return nil, err
	}
	otherJoin, err := add(otherWindowed, otherJoinName, joinStores(thisStore), func() Processor {
		return &streamJoinSide{sh: sh, otherStore: thisStore, partner: thisJoinName, outer: thisOuter}
	})
	if err != nil {
		return nil, err
	}
	merge, err := add(thisJoin, mergeName, nil, func() Processor { return &passThrough{} })
	if err != nil {
		return nil, err
	}
	otherJoin.addChild(merge)
	return s.derive(merge, Serdes{Key: s.serdes.Key}, false), nil
}

// rawBytesSerde keeps the outer-join buffer's keys and values as the bytes this file builds.
// Deserialize copies, as every Serde must: the buffer scan keeps entries past the
// iterator's Next, and a store iterator's bytes change at every step.
type rawBytesSerde struct{}

func (rawBytesSerde) Name() string { return "bytes" }
func (rawBytesSerde) Serialize(_ string, _ Headers, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("outer-join buffer: cannot store a %T", v)
	}
	return b, nil
}
func (rawBytesSerde) Deserialize(_ string, _ Headers, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	return bytes.Clone(b), nil
}

// joinWindowProc is KStreamJoinWindow: forward first, then remember the record for the
// other side's join processor.
type joinWindowProc struct {
	ctx   *Context
	store string
}

func (p *joinWindowProc) Init(ctx *Context) error { p.ctx = ctx; return nil }

func (p *joinWindowProc) Process(rec Record) error {
	if err := p.ctx.Forward(rec); err != nil {
		return err
	}
	if rec.Key == nil || rec.Value == nil {
		return nil
	}
	store, err := p.ctx.windowStore(p.store, rec.Partition)
	if err != nil {
		return err
	}
	// An expired put is dropped by the store and counted there.
	_, err = store.Put(rec.Key, rec.Value, rec.Timestamp, rec.Timestamp)
	return err
}

// streamJoinShared is what both join processors of one join share: for left and outer
// joins, the outer-join buffer of records still waiting for a partner.
type streamJoinShared struct {
	windows     JoinWindows
	joiner      StreamValueJoiner
	buffer      string // "" for inner joins
	keySerde    Serde
	leftValues  Serde
	rightValues Serde
}

// streamJoinSide is KStreamKStreamJoin for one side: left is the "this" stream; outer
// makes this side's unmatched records produce joiner(value, nil) (or (nil, value)).
// Unmatched records wait in the outer-join buffer until a record at the join's stream time
// finds their window closed (emitNonJoined).
type streamJoinSide struct {
	ctx        *Context
	sh         *streamJoinShared
	otherStore string
	partner    string // the other side's join processor, which shares times
	left       bool
	outer      bool
	// times are both sides' per task (Kafka's TimeTracker, one per task, shared by the two
	// join processors of a topology instance).
	times map[int32]*joinTime
}

// joinTime is KStreamImplJoin.TimeTracker: the join's stream time, the largest timestamp of
// every record reaching either side, null keys and values too; and minTime, the smallest
// timestamp put in the outer-join buffer since its last scan, or the last entry the scan
// looked at.
type joinTime struct {
	streamTime int64
	// minTime starts unknown: the first record at stream time scans the buffer, which may
	// hold records from before a restart (Kafka's Long.MAX_VALUE + after + grace wraps
	// around to a time every stream time passes). After a scan that found nothing it is
	// math.MaxInt64, and the buffer stays unscanned until a record waits in it.
	minTime      int64
	minTimeKnown bool
}

func (p *streamJoinSide) Init(ctx *Context) error {
	p.ctx = ctx
	for _, rn := range ctx.task.nodes {
		if o, ok := rn.proc.(*streamJoinSide); ok && rn.name == p.partner && o.times != nil {
			p.times = o.times
		}
	}
	if p.times == nil {
		p.times = map[int32]*joinTime{}
	}
	return nil
}

func (p *streamJoinSide) time(partition int32) *joinTime {
	jt := p.times[partition]
	if jt == nil {
		jt = &joinTime{streamTime: -1}
		p.times[partition] = jt
	}
	return jt
}

// closeTime is the time against which the join finds windows closed: its stream time, as in
// Kafka Streams, and no later than the global watermark including the record being
// processed (DESIGN §5), so that no result waits for a partner that another partition may
// still deliver; in task time (TopologyOptions.TaskTime) its stream time alone.
func (p *streamJoinSide) closeTime(jt *joinTime) int64 {
	if p.ctx.topology.taskTime {
		return jt.streamTime
	}
	wm, ok := p.ctx.topology.computeWatermark()
	if !ok {
		return -1
	}
	return min(jt.streamTime, max(wm, p.ctx.watermark()))
}

// bounds are (before, after) as seen from this side.
func (p *streamJoinSide) bounds() (int64, int64) {
	if p.left {
		return p.sh.windows.Before, p.sh.windows.After
	}
	return p.sh.windows.After, p.sh.windows.Before
}

// lookBack is how long a buffered record of one side waits for a partner (windowsAfterMs
// for the left side, windowsBeforeMs for the right).
func (p *streamJoinSide) lookBack(leftSide bool) int64 {
	if leftSide {
		return p.sh.windows.After
	}
	return p.sh.windows.Before
}

// addSat is a + b held in the int64 range.
func addSat(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

func (p *streamJoinSide) join(rec Record, this, other any, ts int64) error {
	l, r := this, other
	if !p.left {
		l, r = other, this
	}
	out, err := p.sh.joiner(rec, l, r)
	if err != nil {
		return err
	}
	rec.Value, rec.Timestamp = out, ts
	return p.ctx.Forward(rec)
}

func (p *streamJoinSide) Process(rec Record) error {
	jt := p.time(rec.Partition)
	jt.streamTime = max(jt.streamTime, rec.Timestamp)
	if rec.Key == nil && rec.Value != nil && p.outer {
		return p.join(rec, rec.Value, nil, rec.Timestamp) // KIP-962
	}
	if rec.Key == nil {
		p.ctx.Drop(DropNullKey)
		return nil
	}
	if rec.Value == nil {
		p.ctx.Drop(DropNullValue)
		return nil
	}
	ts := rec.Timestamp
	if p.sh.buffer != "" && ts == jt.streamTime {
		if err := p.emitNonJoined(rec, jt); err != nil {
			return err
		}
	}
	before, after := p.bounds()
	store, err := p.ctx.windowStore(p.otherStore, rec.Partition)
	if err != nil {
		return err
	}
	// The other side's records in the window, by timestamp and then arrival (the store
	// retains duplicates); all are read before any result goes downstream.
	it, err := store.FetchKey(rec.Key, max(0, addSat(ts, -before)), max(0, addSat(ts, after)), false)
	if err != nil {
		return err
	}
	var matches []Window
	for it.Next() {
		matches = append(matches, it.Window())
	}
	err = it.Err()
	it.Close()
	if err != nil {
		return err
	}
	for _, m := range matches {
		if p.sh.buffer != "" {
			if err := p.unbuffer(rec, m.Start, !p.left); err != nil {
				return err
			}
		}
		if err := p.join(rec, rec.Value, m.Value, max(ts, m.Timestamp)); err != nil {
			return err
		}
	}
	if len(matches) > 0 || !p.outer {
		return nil
	}
	// A record whose window (without grace) is behind the join's time when it arrives is
	// joined with nil at once, as Kafka Streams does; a partner that still comes within the
	// grace period joins it too.
	if p.sh.buffer == "" || max(0, addSat(ts, after)) < jt.streamTime && max(0, addSat(ts, after)) < p.closeTime(jt) {
		return p.join(rec, rec.Value, nil, ts)
	}
	if !jt.minTimeKnown || ts < jt.minTime {
		jt.minTime, jt.minTimeKnown = ts, true
	}
	return p.bufferRecord(rec)
}

// The outer-join buffer key is [8-byte big-endian ts][1 byte: 1 left, 0 right][key bytes]
// (Kafka Streams' TimestampedKeyAndJoinSide), so it iterates by time, right before left;
// the value is the list of that key's values, each [4-byte big-endian length][bytes].
func (p *streamJoinSide) bufferKey(rec Record, ts int64, leftSide bool) ([]byte, error) {
	kb, err := p.sh.keySerde.Serialize(rec.Topic, rec.Headers, rec.Key)
	if err != nil {
		return nil, fmt.Errorf("join buffer key: %w", err)
	}
	out := binary.BigEndian.AppendUint64(make([]byte, 0, 9+len(kb)), uint64(ts))
	side := byte(0)
	if leftSide {
		side = 1
	}
	return append(append(out, side), kb...), nil
}

func (p *streamJoinSide) bufferRecord(rec Record) error {
	store, err := p.ctx.store(p.sh.buffer, rec.Partition)
	if err != nil {
		return err
	}
	key, err := p.bufferKey(rec, rec.Timestamp, p.left)
	if err != nil {
		return err
	}
	values := p.sh.leftValues
	if !p.left {
		values = p.sh.rightValues
	}
	vb, err := values.Serialize(rec.Topic, rec.Headers, rec.Value)
	if err != nil {
		return fmt.Errorf("join buffer value: %w", err)
	}
	list, _, _, err := store.Get(key)
	if err != nil {
		return err
	}
	prev, _ := list.([]byte)
	next := binary.BigEndian.AppendUint32(append([]byte(nil), prev...), uint32(len(vb)))
	return store.Put(key, append(next, vb...), rec.Timestamp)
}

// unbuffer removes the other side's buffered records for rec's key at ts: they have a
// partner now.
func (p *streamJoinSide) unbuffer(rec Record, ts int64, leftSide bool) error {
	store, err := p.ctx.store(p.sh.buffer, rec.Partition)
	if err != nil {
		return err
	}
	key, err := p.bufferKey(rec, ts, leftSide)
	if err != nil {
		return err
	}
	_, err = store.Delete(key, ts)
	return err
}

type bufferedEntry struct {
	key  []byte
	list []byte
}

// emitNonJoined is KStreamKStreamJoin#emitNonJoinedOuterRecords, run before a record at the
// join's stream time joins: it scans the buffer in time order for the records whose window
// has closed, ts + lookBack + grace < the close time, and forwards each joined with nil, at
// its own timestamp, with the triggering record's headers and record context, then deletes
// it. A record of one side still waiting stops the scan for that side; once both sides have
// one, for every later record. The buffer is not scanned while minTime + this side's after
// + grace has not passed the close time; a scan leaves minTime at the time of the last entry
// it looked at, as in Kafka Streams. Deleting in the epoch of the output makes the emission
// happen exactly once.
func (p *streamJoinSide) emitNonJoined(rec Record, jt *joinTime) error {
	_, after := p.bounds()
	grace := p.sh.windows.Grace
	if jt.minTimeKnown && addSat(addSat(jt.minTime, after), grace) >= jt.streamTime {
		return nil
	}
	now := p.closeTime(jt)
	if jt.minTimeKnown && addSat(addSat(jt.minTime, after), grace) >= now {
		return nil
	}
	jt.minTime, jt.minTimeKnown = math.MaxInt64, true
	store, err := p.ctx.store(p.sh.buffer, rec.Partition)
	if err != nil {
		return err
	}
	it, err := store.Range(nil, nil, false)
	if err != nil {
		return err
	}
	var closed []bufferedEntry
	leftOpen, rightOpen := false, false
	for it.Next() {
		k, _ := it.Key().([]byte)
		v, _ := it.Value().([]byte)
		if len(k) < 9 {
			continue
		}
		ts := int64(binary.BigEndian.Uint64(k))
		jt.minTime = ts
		if leftOpen && rightOpen {
			break
		}
		leftSide := k[8] == 1
		if addSat(addSat(ts, p.lookBack(leftSide)), grace) >= now {
			if leftSide {
				leftOpen = true
			} else {
				rightOpen = true
			}
			continue
		}
		closed = append(closed, bufferedEntry{key: k, list: v})
	}
	err = it.Err()
	it.Close()
	if err != nil {
		return err
	}
	for _, e := range closed {
		if err := p.emitEntry(store, rec, e); err != nil {
			return err
		}
	}
	return nil
}

func (p *streamJoinSide) emitEntry(store *KeyValueStore, trigger Record, e bufferedEntry) error {
	ts := int64(binary.BigEndian.Uint64(e.key))
	leftSide := e.key[8] == 1
	values := p.sh.rightValues
	if leftSide {
		values = p.sh.leftValues
	}
	key, err := p.sh.keySerde.Deserialize("", nil, e.key[9:])
	if err != nil {
		return fmt.Errorf("join buffer key: %w", err)
	}
	rec := trigger
	rec.Key, rec.Timestamp = key, ts
	for rest := e.list; len(rest) > 0; {
		if len(rest) < 4 || int(binary.BigEndian.Uint32(rest)) > len(rest)-4 {
			return fmt.Errorf("join buffer %s: corrupt value list", p.sh.buffer)
		}
		n := int(binary.BigEndian.Uint32(rest))
		v, err := values.Deserialize("", nil, rest[4:4+n])
		if err != nil {
			return fmt.Errorf("join buffer value: %w", err)
		}
		rest = rest[4+n:]
		l, r := v, any(nil)
		if !leftSide {
			l, r = nil, v
		}
		out, err := p.sh.joiner(rec, l, r)
		if err != nil {
			return err
		}
		res := rec
		res.Value = out
		if err := p.ctx.Forward(res); err != nil {
			return err
		}
	}
	_, err = store.Delete(e.key, ts)
	return err
}
