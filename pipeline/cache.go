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
	minEnd int64
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
	c.minEnd = math.MaxInt64
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

// emitFor is how a processor materialized in store forwards its updates: through a record
// cache in front of store, or straight to forward when caching is off for it
// (statestore.cache.max.bytes = 0, or the store's Materialized disabled caching). The
// processors of a cogroup share their store, and so its one cache, which forwards through
// the last of them, as the last flush listener set on a Kafka Streams caching store wins.
func (t *Topology) emitFor(store string, forward func(Record) error) func(Record) error {
	spec, ok := t.storeSpecs[store]
	if t.cacheMaxBytes <= 0 || !ok || spec.CachingDisabled {
		return forward
	}
	c, ok := t.cacheOf[store]
	if !ok {
		c = newRecordCache(forward)
		t.caches = append(t.caches, c)
		t.cacheOf[store] = c
	}
	c.forward = forward
	return c.put
}

// shareCaches splits the cache budget evenly among the caches, as Kafka Streams splits
// statestore.cache.max.bytes among its stores.
func (t *Topology) shareCaches() {
	for _, c := range t.caches {
		c.max = t.cacheMaxBytes / int64(len(t.caches))
	}
}

// flushCachesBefore forwards the caches that may hold an update of a window ending at or
// before wm. Such an update was accepted while its window was open on its operator's stream
// time; it must reach the processors waiting for the watermark before wm closes the window,
// or they would take it for a late update of a final result.
func (t *Topology) flushCachesBefore(wm int64) error {
	for _, c := range t.caches {
		if c.minEnd <= wm {
			if err := c.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// FlushCaches forwards every cached update, then lets the processors that keep state in
// memory write what a restart needs: the commit barrier calls it first, so that what the
// epoch forwards and writes belongs to the epoch.
func (t *Topology) FlushCaches() error {
	for _, c := range t.caches {
		if err := c.flush(); err != nil {
			return err
		}
	}
	for _, fn := range t.commitListeners {
		if err := fn(); err != nil {
			return err
		}
	}
	return nil
}

// onCommit registers a processor that writes in-memory state at the commit barrier.
func (t *Topology) onCommit(fn func() error) { t.commitListeners = append(t.commitListeners, fn) }
