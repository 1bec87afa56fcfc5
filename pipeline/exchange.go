package pipeline

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// Exchange carries re-keyed records between the topologies of one application that run
// on different goroutines (the agent's workers), one Lane each: in memory, what Kafka
// Streams' repartition topics carry between its stream threads.
//
// A lane's inbox is bounded. A topology hands its lane (its Router) the records it
// re-keys for other lanes' tasks; the lane hands them on when the topology flushes it, in
// order, to the inboxes of the lanes that run their tasks. A record is never refused: an
// inbox may go over its bound by what the records of one flush hold. Its sender's lane then
// pushes back (Blocked) until the inbox is back under the bound; the sender stops taking new
// work meanwhile but still processes its own inbox, so two lanes each waiting for room in
// the other's inbox still make room for each other (no deadlock), and what is buffered stays
// bounded: nothing new enters while any inbox is full, and what the records already inside
// produce is bounded by the topology (a record crosses at most one repartition per
// sub-topology).
//
// The records on their way hold the application's watermark back (Hold): in a lane's
// outbox, in an inbox, and while their lane processes them.
type Exchange struct {
	lanes    []*Lane
	capacity int
	// owner says which lane runs each task.
	owner atomic.Pointer[map[TaskID]int]
	// quiet is signalled when a lane finishes a batch while someone waits for the
	// exchange to empty (WaitQuiet).
	quiet    chan struct{}
	watching atomic.Bool
}

// DefaultExchangeCapacity is the bound of a lane's inbox, in records.
const DefaultExchangeCapacity = 4096

// NewExchange makes an exchange of n lanes whose inboxes hold capacity records (before
// they push back), their holds on time.
func NewExchange(n, capacity int, time *GlobalTime) *Exchange {
	ex := &Exchange{capacity: max(capacity, 1), quiet: make(chan struct{}, 1)}
	for i := range n {
		ex.lanes = append(ex.lanes, &Lane{
			ex: ex, id: i,
			wake:    make(chan struct{}, 1),
			inHold:  time.NewHold(),
			outHold: time.NewHold(),
			busy:    time.NewHold(),
			out:     make([][]Rekeyed, n),
			outMin:  math.MaxInt64,
		})
	}
	empty := map[TaskID]int{}
	ex.owner.Store(&empty)
	return ex
}

// Lane is one topology's end of the exchange.
func (ex *Exchange) Lane(i int) *Lane { return ex.lanes[i] }

// SetOwners says which lane runs each task. Call it while the exchange is quiet.
func (ex *Exchange) SetOwners(owner map[TaskID]int) {
	m := make(map[TaskID]int, len(owner))
	for id, i := range owner {
		m[id] = i
	}
	ex.owner.Store(&m)
}

// Quiet reports whether every record routed has been processed by the lane it went to.
func (ex *Exchange) Quiet() bool {
	var sent, done int64
	for _, l := range ex.lanes {
		// done before sent: a record is counted sent before it is put in an inbox, so every
		// record in a sum of done read first is in the sum of sent read after it, and the
		// two are equal only if nothing sent was on its way.
		done += l.done.Load()
	}
	for _, l := range ex.lanes {
		sent += l.sent.Load()
	}
	return sent == done
}

// WaitQuiet waits until Quiet, or until stop is closed (false). The lanes must go on
// processing their inboxes meanwhile.
func (ex *Exchange) WaitQuiet(stop <-chan struct{}) bool {
	ex.watching.Store(true)
	defer ex.watching.Store(false)
	for !ex.Quiet() {
		select {
		case <-ex.quiet:
		case <-stop:
			return false
		}
	}
	return true
}

// Lane is one topology's end of an Exchange: its Router, and its inbox. Route, Flush,
// Take and Done belong to the goroutine that runs the topology.
type Lane struct {
	ex *Exchange
	id int

	mu      sync.Mutex
	inbox   []Rekeyed
	inMin   int64         // the earliest timestamp in the inbox, math.MaxInt64 when empty
	room    chan struct{} // closed when the inbox is back under its bound; nil while it is
	wake    chan struct{} // signalled when records arrive
	spare   []Rekeyed
	inHold  *Hold
	outHold *Hold
	busy    *Hold // the records Take handed out, until Done

	// The outbox, by destination lane, and its earliest timestamp.
	out    [][]Rekeyed
	outMin int64
	// full is a lane whose inbox this one's last Flush left over its bound.
	full *Lane

	sent, done atomic.Int64
}

// Route implements Router: the record waits in the outbox until Flush.
func (l *Lane) Route(r Rekeyed) error {
	to, ok := (*l.ex.owner.Load())[r.Task]
	if !ok {
		return fmt.Errorf("no worker runs task %s", r.Task)
	}
	l.out[to] = append(l.out[to], r)
	if ts := r.Record.Timestamp; ts < l.outMin {
		l.outMin = ts
		l.outHold.Set(ts)
	}
	return nil
}

// Flush implements Router: it hands the outbox to the inboxes, in order.
func (l *Lane) Flush() {
	if l.outMin == math.MaxInt64 {
		return
	}
	// Counted sent before any can be done (Quiet).
	var n int64
	for _, recs := range l.out {
		n += int64(len(recs))
	}
	l.sent.Add(n)
	for i, recs := range l.out {
		if len(recs) == 0 {
			continue
		}
		if l.ex.lanes[i].put(recs) {
			l.full = l.ex.lanes[i]
		}
		clear(recs)
		l.out[i] = recs[:0]
	}
	l.outMin = math.MaxInt64
	l.outHold.Set(math.MaxInt64)
}

// put appends records to the inbox; it reports whether the inbox is over its bound.
func (l *Lane) put(recs []Rekeyed) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.inbox) == 0 {
		l.inMin = math.MaxInt64
	}
	l.inbox = append(l.inbox, recs...)
	for i := range recs {
		if ts := recs[i].Record.Timestamp; ts < l.inMin {
			l.inMin = ts
		}
	}
	l.inHold.Set(l.inMin)
	select {
	case l.wake <- struct{}{}:
	default:
	}
	over := len(l.inbox) > l.ex.capacity
	if over && l.room == nil {
		l.room = make(chan struct{})
	}
	return over
}

// Wake receives when records arrived in the inbox.
func (l *Lane) Wake() <-chan struct{} { return l.wake }

// Blocked is nil unless the last Flush left another lane's inbox over its bound and it
// still is; then it is closed once that inbox has room again. A lane that is blocked takes
// no new work but processes its inbox (Take).
func (l *Lane) Blocked() <-chan struct{} {
	if l.full == nil {
		return nil
	}
	to := l.full
	to.mu.Lock()
	defer to.mu.Unlock()
	if to.room == nil {
		l.full = nil
		return nil
	}
	return to.room
}

// Take hands out every record in the inbox, in order; they hold the watermark until Done.
func (l *Lane) Take() []Rekeyed {
	l.mu.Lock()
	defer l.mu.Unlock()
	recs := l.inbox
	if len(recs) == 0 {
		return nil
	}
	l.busy.Set(l.inMin)
	l.inHold.Set(math.MaxInt64)
	l.inbox, l.spare = l.spare[:0], nil
	if l.room != nil {
		close(l.room)
		l.room = nil
	}
	return recs
}

// Done says the records Take handed out are processed (and what they produced flushed);
// recs is given back for reuse.
func (l *Lane) Done(recs []Rekeyed) {
	l.busy.Set(math.MaxInt64)
	l.done.Add(int64(len(recs)))
	clear(recs)
	l.mu.Lock()
	if l.spare == nil {
		l.spare = recs[:0]
	}
	l.mu.Unlock()
	if l.ex.watching.Load() {
		select {
		case l.ex.quiet <- struct{}{}:
		default:
		}
	}
}
