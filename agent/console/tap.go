package console

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Taps lets clients watch the records leaving a node. While nobody watches a node, the
// engine's hook of that node is nil. While someone does, the hook samples on the processing
// goroutine: at most rate records per second are encoded and handed to the watchers, each
// through a buffer of one second of records; a watcher that falls further behind loses
// records, counted, and never slows processing down.
type Taps struct {
	rate, maxClients int

	mu      sync.Mutex
	subs    map[string]map[*Subscription]bool
	clients int
	changed chan struct{}
	// now is a coarse clock (Unix nanoseconds) that a goroutine moves every clockTick while
	// any tap is open, so that the hooks need not read the system clock per record.
	now       atomic.Int64
	stopClock chan struct{}

	// installed are the hooks of the running topology; only Apply, on the processing
	// goroutine, touches it.
	installed map[string]*nodeTap
}

// ErrTooManyTaps is Subscribe's answer when maxClients watchers are connected.
var ErrTooManyTaps = errors.New("too many taps")

// NewTaps lets at most maxClients watchers at once see at most rate records per second of
// each node.
func NewTaps(rate, maxClients int) *Taps {
	return &Taps{rate: max(rate, 1), maxClients: max(maxClients, 1), subs: map[string]map[*Subscription]bool{},
		changed: make(chan struct{}, 1), installed: map[string]*nodeTap{}}
}

// Rate is the most records per second a tap shows of one node.
func (t *Taps) Rate() int { return t.rate }

// Subscription is one watcher of one node.
type Subscription struct {
	node string
	// Events are the encoded TapEvents, JSON.
	Events chan []byte
	lost   atomic.Int64
}

// Lost returns, and resets, the number of records this watcher missed because its buffer
// was full.
func (s *Subscription) Lost() int64 { return s.lost.Swap(0) }

// Subscribe starts watching node.
func (t *Taps) Subscribe(node string) (*Subscription, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.clients >= t.maxClients {
		return nil, ErrTooManyTaps
	}
	s := &Subscription{node: node, Events: make(chan []byte, t.rate)}
	if t.subs[node] == nil {
		t.subs[node] = map[*Subscription]bool{}
	}
	t.subs[node][s] = true
	if t.clients++; t.clients == 1 {
		t.now.Store(time.Now().UnixNano())
		t.stopClock = make(chan struct{})
		go t.runClock(t.stopClock)
	}
	t.notify()
	return s, nil
}

// clockTick is the resolution of the hooks' clock: a tenth of the smallest burst a token
// bucket refills.
const clockTick = 10 * time.Millisecond

func (t *Taps) runClock(stop chan struct{}) {
	tick := time.NewTicker(clockTick)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			t.now.Store(now.UnixNano())
		}
	}
}

// Unsubscribe stops a watcher.
func (t *Taps) Unsubscribe(s *Subscription) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.subs[s.node][s] {
		return
	}
	delete(t.subs[s.node], s)
	if len(t.subs[s.node]) == 0 {
		delete(t.subs, s.node)
	}
	if t.clients--; t.clients == 0 {
		close(t.stopClock)
	}
	t.notify()
}

func (t *Taps) notify() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// Changed receives when the set of watched nodes changed: the processing goroutine then
// calls Apply.
func (t *Taps) Changed() <-chan struct{} { return t.changed }

// Tappable is the part of pipeline.Topology that Apply uses.
type Tappable interface {
	SetTap(node string, fn pipeline.TapFunc) error
}

// Apply installs the hooks of the watched nodes in topo (every worker's topology, through
// it) and removes the others. The processing loop calls it when Changed says so and after it
// replaces its topologies.
func (t *Taps) Apply(topo Tappable) {
	t.mu.Lock()
	watched := make(map[string]bool, len(t.subs))
	for node := range t.subs {
		watched[node] = true
	}
	t.mu.Unlock()
	for node := range t.installed {
		if !watched[node] {
			// A node a reload removed has no hook to remove.
			_ = topo.SetTap(node, nil)
			delete(t.installed, node)
		}
	}
	for node := range watched {
		nt, ok := t.installed[node]
		if !ok {
			nt = &nodeTap{taps: t, node: node, burst: max(float64(t.rate)/10, 1)}
			t.installed[node] = nt
		}
		// A node the running topology does not have (its watchers connected before a
		// reload removed it) shows nothing.
		_ = topo.SetTap(node, nt.see)
	}
}

// nodeTap is the hook of one watched node: a token bucket of rate per second, at most a
// tenth of a second of them at once, so the records shown are spread over each second. The
// node runs in every task of it, on every worker: mu serialises the hook's calls.
type nodeTap struct {
	taps    *Taps
	node    string
	burst   float64
	mu      sync.Mutex
	tokens  float64
	last    int64 // the clock when tokens were last counted, 0 before the first record
	skipped int64
}

func (n *nodeTap) see(rec pipeline.Record) {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.taps.now.Load()
	if n.last == 0 {
		n.tokens = n.burst
	} else if now > n.last {
		n.tokens = min(n.burst, n.tokens+float64(now-n.last)*float64(n.taps.rate)/1e9)
	}
	n.last = now
	if n.tokens < 1 {
		n.skipped++
		return
	}
	n.tokens--
	ev, err := json.Marshal(newTapEvent(n.node, rec, n.skipped))
	if err != nil {
		ev = fmt.Appendf(nil, `{"node":%q,"error":%q}`, n.node, err.Error())
	}
	n.skipped = 0
	n.taps.publish(n.node, ev)
}

func (t *Taps) publish(node string, ev []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for s := range t.subs[node] {
		select {
		case s.Events <- ev:
		default:
			s.lost.Add(1)
		}
	}
}

// TapEvent is one record a tapped node emitted, as GET /v1/tap/{node} sends it.
type TapEvent struct {
	Node      string      `json:"node"`
	Timestamp int64       `json:"timestamp"`
	Key       any         `json:"key"`
	Value     any         `json:"value"`
	Headers   []TapHeader `json:"headers"`
	// Topic, Partition and Offset name the input record this one comes from.
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Skipped counts the records of the node not shown since the previous one (sampling).
	Skipped int64 `json:"skipped"`
}

// TapHeader is a record header: Value when it is UTF-8 text, else Base64.
type TapHeader struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Base64 string `json:"base64,omitempty"`
}

func newTapEvent(node string, rec pipeline.Record, skipped int64) TapEvent {
	ev := TapEvent{Node: node, Timestamp: rec.Timestamp, Key: tapValue(rec.Key), Value: tapValue(rec.Value),
		Headers: make([]TapHeader, len(rec.Headers)), Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Skipped: skipped}
	for i, h := range rec.Headers {
		ev.Headers[i] = TapHeader{Key: h.Key}
		if utf8.Valid(h.Value) {
			ev.Headers[i].Value = string(h.Value)
		} else {
			ev.Headers[i].Base64 = base64.StdEncoding.EncodeToString(h.Value)
		}
	}
	return ev
}

// tapValue turns a value flowing between nodes (what the serdes decoded, what callbacks
// made) into one encoding/json writes: windowed keys and table changes as objects, bytes as
// Base64 (as interactive queries answer them), floats JSON cannot hold as text. The result
// shares nothing with v that the engine may reuse, once encoded.
func tapValue(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int64, int32, int, json.RawMessage:
		return x
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return x
	case pipeline.Windowed:
		return map[string]any{"key": tapValue(x.Key), "window": map[string]int64{"start": x.Start, "end": x.End}}
	case pipeline.Change:
		return map[string]any{"new": tapValue(x.New), "old": tapValue(x.Old)}
	case interface{ Value() (any, error) }:
		// A value held undecoded or as a Lua table (luart/serde_raw.go, serde_table.go): shown
		// as its Go values, converted here on the processing goroutine.
		v, err := x.Value()
		if err != nil {
			return err.Error()
		}
		return tapValue(v)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = tapValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = tapValue(e)
		}
		return out
	default:
		if _, err := json.Marshal(x); err == nil {
			return x
		}
		return fmt.Sprint(x)
	}
}
