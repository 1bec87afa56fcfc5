package console

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
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
	// hooks are the same hooks for the clock goroutine, which reports their skipped records
	// (under mu).
	hooks map[string]*nodeTap
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
	// Events are what the watcher is shown, in order.
	Events chan TapMessage
	lost   atomic.Int64
}

// TapMessage is one event of a tap: a record shown (Event "record", Data the JSON of a
// TapEvent), or records skipped while none was shown (Event "skipped", Data the JSON of a
// TapSkipped).
type TapMessage struct {
	Event string
	Data  []byte
}

// TapSkipped counts the records of a node not shown since the previous event of its tap,
// when no record was shown for a second.
type TapSkipped struct {
	Node    string `json:"node"`
	Skipped int64  `json:"skipped"`
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
	s := &Subscription{node: node, Events: make(chan TapMessage, t.rate)}
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

// skipReportEvery is how often the records skipped while none was shown are reported.
const skipReportEvery = time.Second

func (t *Taps) runClock(stop chan struct{}) {
	tick := time.NewTicker(clockTick)
	defer tick.Stop()
	report := time.NewTicker(skipReportEvery)
	defer report.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			t.now.Store(now.UnixNano())
		case <-report.C:
			t.reportSkipped()
		}
	}
}

// reportSkipped publishes the skipped records of each node that showed none since the last
// report: a node that goes quiet after a burst would otherwise never tell them.
func (t *Taps) reportSkipped() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for node, nt := range t.hooks {
		if nt.shown.Swap(false) {
			continue
		}
		if n := nt.skipped.Swap(0); n > 0 {
			ev, _ := json.Marshal(TapSkipped{Node: node, Skipped: n})
			t.publishLocked(node, TapMessage{Event: "skipped", Data: ev})
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
	ValueSerde(node string) pipeline.Serde
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
		serde := topo.ValueSerde(node)
		nt.mu.Lock()
		nt.serde = serde
		nt.mu.Unlock()
		// A node the running topology does not have (its watchers connected before a
		// reload removed it) shows nothing.
		_ = topo.SetTap(node, nt.see)
	}
	t.mu.Lock()
	t.hooks = maps.Clone(t.installed)
	t.mu.Unlock()
}

// nodeTap is the hook of one watched node: a token bucket of rate per second, at most a
// tenth of a second of them at once, so the records shown are spread over each second. The
// node runs in every task of it, on every worker: mu serialises the hook's calls.
type nodeTap struct {
	taps  *Taps
	node  string
	burst float64
	// mu guards serde, tokens and last.
	mu     sync.Mutex
	serde  pipeline.Serde // what the node's values are written with, nil when unknown
	tokens float64
	last   int64 // the clock when tokens were last counted, 0 before the first record
	// skipped counts the records not shown since the last event; shown says a record was
	// shown since the clock goroutine last looked (reportSkipped).
	skipped atomic.Int64
	shown   atomic.Bool
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
		n.skipped.Add(1)
		return
	}
	n.tokens--
	rec.Value = asWritten(n.serde, rec.Value)
	ev, err := json.Marshal(newTapEvent(n.node, rec, n.skipped.Swap(0)))
	if err != nil {
		ev = fmt.Appendf(nil, `{"node":%q,"error":%q}`, n.node, err.Error())
	}
	n.shown.Store(true)
	n.taps.mu.Lock()
	n.taps.publishLocked(n.node, TapMessage{Event: "record", Data: ev})
	n.taps.mu.Unlock()
}

// publishLocked hands ev to the watchers of node; t.mu is held.
func (t *Taps) publishLocked(node string, ev TapMessage) {
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
	// Skipped counts the records of the node not shown since the previous event (sampling).
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

// asWritten is v as serde writes it and reads it back, where that can differ from v and
// costs nothing but time: through a number serde or a Schema Registry serde's local schema
// (never the registry). So a tap shows what a store or topic will hold, as the store browser
// does: a long beyond 2^53, which Lua holds as a decimal string (docs/lua.md), is a number.
// A value the serde cannot write is shown as it is; the node's sink or store reports it.
func asWritten(serde pipeline.Serde, v any) any {
	if c, ok := v.(pipeline.Change); ok {
		c.New, c.Old = asWritten(serde, c.New), asWritten(serde, c.Old)
		return c
	}
	if v == nil || serde == nil {
		return v
	}
	switch s := serde.(type) {
	case *schemas.Serde:
		if out, err := s.Typed(v); err == nil {
			return out
		}
	case serdes.Long, serdes.Integer, serdes.Double:
		in := v
		if g, ok := v.(interface{ Value() (any, error) }); ok {
			var err error
			if in, err = g.Value(); err != nil {
				return v
			}
		}
		if b, err := s.Serialize("", nil, in); err == nil {
			if out, err := s.Deserialize("", nil, b); err == nil {
				return out
			}
		}
	}
	return v
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
