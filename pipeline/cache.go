package pipeline

import (
	"container/list"
	"fmt"
	"math"
	"strconv"
)

// recordCache is Kafka Streams' record cache in front of a materialized aggregation or
// table (statestore.cache.max.bytes): between two commits a key's updates collapse into
// one, forwarded at the commit (flush) or when the cache is full (eviction of the least
// recently updated key), carrying the newest value and the value before the first update.
type recordCache struct {
	max     int64
	size    int64
	order   *list.List // of *cacheEntry, least recently updated first
	index   map[string]*list.Element
	forward func(Record) error
	// minEnd is the earliest end of a window whose update may be cached, math.MaxInt64
	// when none is: the watermark must not close such a window before the update is out.
	// t is told when it moves (Topology.holdCaches).
	minEnd int64
	t      *Topology
}

type cacheEntry struct {
	key   string
	rec   Record
	bytes int64
}

// cacheEntryOverhead is what an entry costs besides its key and value (map slot, list
// element, record header), so that budgets in bytes mean roughly what they say.
const cacheEntryOverhead = 96

func newRecordCache(forward func(Record) error) *recordCache {
	return &recordCache{order: list.New(), index: map[string]*list.Element{}, forward: forward, minEnd: math.MaxInt64}
}

// put caches an update of rec.Key; rec.Value is a Change.
func (c *recordCache) put(rec Record) error {
	k := cacheKey(rec.Partition, rec.Key)
	if w, ok := rec.Key.(Windowed); ok {
		c.minEnd = min(c.minEnd, w.End)
		if c.t != nil {
			c.t.lowerCacheHold(c.minEnd)
		}
	}
	if el, ok := c.index[k]; ok {
		e := el.Value.(*cacheEntry)
		ch, _ := rec.Value.(Change)
		ch.Old = e.rec.Value.(Change).Old
		rec.Value = ch
		c.size += valueSize(ch.New) - valueSize(e.rec.Value.(Change).New)
		e.rec = rec
		c.order.MoveToBack(el)
	} else {
		e := &cacheEntry{key: k, rec: rec, bytes: int64(len(k)) + cacheEntryOverhead + valueSize(rec.Value.(Change).New)}
		c.index[k] = c.order.PushBack(e)
		c.size += e.bytes
	}
	for c.size > c.max && c.order.Len() > 0 {
		if err := c.evict(c.order.Front()); err != nil {
			return err
		}
	}
	return nil
}

func (c *recordCache) evict(el *list.Element) error {
	e := c.order.Remove(el).(*cacheEntry)
	delete(c.index, e.key)
	c.size -= e.bytes
	return c.forward(e.rec)
}

// flush forwards every cached update, least recently updated first.
func (c *recordCache) flush() error {
	for c.order.Len() > 0 {
		if err := c.evict(c.order.Front()); err != nil {
			return err
		}
	}
	if c.minEnd != math.MaxInt64 {
		c.minEnd = math.MaxInt64
		if c.t != nil {
			c.t.cachesFlushed = true
		}
	}
	return nil
}

// cacheKey identifies a key within its task partition.
func cacheKey(partition int32, key any) string {
	return string(appendCacheKey(make([]byte, 0, 48), partition, key))
}

func appendCacheKey(b []byte, partition int32, key any) []byte {
	b = append(strconv.AppendInt(b, int64(partition), 10), '/')
	switch k := key.(type) {
	case string:
		return append(append(b, 's'), k...)
	case []byte:
		return append(append(b, 'b'), k...)
	case int64:
		return strconv.AppendInt(append(b, 'i'), k, 10)
	case Windowed:
		b = strconv.AppendInt(append(b, 'w'), k.Start, 10)
		b = append(strconv.AppendInt(append(b, '/'), k.End, 10), '/')
		return appendCacheKey(b, 0, k.Key)
	default:
		return fmt.Appendf(b, "%T:%v", key, key)
	}
}

func valueSize(v any) int64 {
	switch x := v.(type) {
	case string:
		return int64(len(x))
	case []byte:
		return int64(len(x))
	case nil:
		return 0
	default:
		return 16
	}
}

// emitFor is how a processor materialized in store forwards its updates: through the
// task's record cache in front of store, or straight to forward when caching is off for it
// (statestore.cache.max.bytes = 0, or the store's Materialized disabled caching). The
// processors of a cogroup share their store, and so its one cache, which forwards through
// the last of them, as the last flush listener set on a Kafka Streams caching store wins.
func (k *Task) emitFor(store string, forward func(Record) error) func(Record) error {
	t := k.t
	spec, ok := t.storeSpecs[store]
	if t.cacheMaxBytes <= 0 || !ok || spec.CachingDisabled {
		return forward
	}
	c, ok := k.cacheOf[store]
	if !ok {
		c = newRecordCache(forward)
		c.t = t
		k.caches = append(k.caches, c)
		k.cacheOf[store] = c
	}
	c.forward = forward
	return c.put
}

// shareCaches splits the cache budget evenly among the caches of the topology's tasks, as
// Kafka Streams splits a thread's share of statestore.cache.max.bytes among its tasks'
// stores.
func (t *Topology) shareCaches() {
	n := 0
	for _, k := range t.order {
		n += len(k.caches)
	}
	for _, k := range t.order {
		for _, c := range k.caches {
			c.max = t.cacheMaxBytes / int64(n)
		}
	}
}

// holdCaches holds the global watermark below the earliest end of a window whose update a
// cache of this topology holds, which other topologies must not close before the update
// reaches them (flushCachesBefore). A cache's update lowers the hold at once
// (lowerCacheHold); a flush raises it only once what the cache forwarded is processed or
// handed to the router (drainAndFlush).
func (t *Topology) holdCaches() {
	earliest := int64(math.MaxInt64)
	if t.time.listening.Load() == 0 {
		t.cacheHold.Set(earliest)
		return
	}
	for _, k := range t.order {
		for _, c := range k.caches {
			earliest = min(earliest, c.minEnd)
		}
	}
	t.cacheHold.Set(earliest)
}

// lowerCacheHold holds the watermark below a window end a cache now holds an update of,
// while some processor of the application waits for the watermark (otherwise the caches
// need not hold it, and are only flushed at the barrier).
func (t *Topology) lowerCacheHold(end int64) {
	if end < t.cacheHold.at.Load() && t.time.listening.Load() > 0 {
		t.cacheHold.Set(end)
	}
}

// flushCachesBefore forwards the caches that may hold an update of a window ending at or
// before wm. Such an update was accepted while its window was open on its operator's stream
// time; it must reach the processors waiting for the watermark before wm closes the window,
// or they would take it for a late update of a final result.
func (t *Topology) flushCachesBefore(wm int64) error {
	for _, k := range t.order {
		for _, c := range k.caches {
			if c.minEnd <= wm {
				if err := c.flush(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// FlushCaches forwards every cached update and processes what that re-keys for this
// topology's tasks (FlushRecordCaches), then lets the processors that keep state in memory
// write what a restart needs (PrepareCommit): the commit barrier calls it first, so that
// what the epoch forwards and writes belongs to the epoch.
func (t *Topology) FlushCaches() error {
	if _, err := t.FlushRecordCaches(); err != nil {
		return err
	}
	return t.PrepareCommit()
}

// FlushRecordCaches forwards every cached update and Drains; it reports whether a cache
// forwarded anything.
func (t *Topology) FlushRecordCaches() (bool, error) {
	flushed := false
	for _, k := range t.order {
		for _, c := range k.caches {
			flushed = flushed || c.order.Len() > 0
			if err := c.flush(); err != nil {
				return flushed, err
			}
		}
	}
	return flushed, t.Drain()
}

// PrepareCommit lets the processors that keep state in memory write what a restart needs,
// once every record of the epoch is processed and every cache flushed.
func (t *Topology) PrepareCommit() error {
	for _, k := range t.order {
		for _, fn := range k.commitListeners {
			if err := fn(); err != nil {
				return err
			}
		}
	}
	return nil
}
