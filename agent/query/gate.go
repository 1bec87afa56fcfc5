package query

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

const (
	// maxQueryBody bounds a query's body (POST /v2/query): a query is a few keys and bounds.
	maxQueryBody = 1 << 20
	// bodiesInFlight bounds the query bodies being read or held at once, so that clients
	// sending bodies together keep at most bodiesInFlight × maxQueryBody (64 MiB) in memory:
	// bodies are read before a slot is taken, and without this any number of connections
	// could each hold up to 1 MiB for the server's read timeout.
	bodiesInFlight = 64
	// scanChunk is how many entries a scan reads in one go (see pacer).
	scanChunk = 256
	// deadlineGrace is the time a query that hit its deadline has left to write the error.
	deadlineGrace = time.Second
	// queueWait is how long a query waits for a slot before it is turned away; Retry-After
	// says the same.
	queueWait  = time.Second
	retryAfter = "1"
	// queryRest is how many times as long as it was held a CPU token rests: queries
	// together use at most 1/(1+queryRest) of the CPUs.
	queryRest = 3
)

// queryGate admits interactive queries and shares the CPU with the processing loop.
//
// At most cap(slots) queries are served at once; one more waits up to queueWait for a
// slot, parked, and is then turned away with 503 and Retry-After. Turned away at once,
// 500 clients asking again at once took most of one CPU with 503 answers alone.
//
// Queries together use at most a quarter of the CPUs, so that processing keeps the rest:
// the Go scheduler has no priorities, and with one CPU four scans took most of it whatever
// the loop needed, which then outlived transaction.timeout.ms. A query runs while it holds
// one of GOMAXPROCS tokens, in chunks (see pacer), and a token it returns rests three
// times as long as it was held before another query may take it. Writing to the client
// needs no token (see pacedWriter).
type queryGate struct {
	slots      chan struct{}
	bodies     chan struct{}  // bodiesInFlight: a request with a body holds one until it is answered
	cpu        chan time.Time // the tokens, each holding when its rest ends
	timeout    time.Duration
	writeError func(w http.ResponseWriter, status int, code, msg string)
}

// newQueryGate serves concurrency queries at once on cpus tokens (GOMAXPROCS); writeError
// writes its refusals.
func newQueryGate(concurrency, cpus int, timeout time.Duration, writeError func(w http.ResponseWriter, status int, code, msg string)) *queryGate {
	g := &queryGate{slots: make(chan struct{}, concurrency), bodies: make(chan struct{}, bodiesInFlight), cpu: make(chan time.Time, cpus), timeout: timeout, writeError: writeError}
	for range cap(g.cpu) {
		g.cpu <- time.Time{}
	}
	return g
}

// turnAway answers a query the gate has no room for with 503 and Retry-After; why says what
// is full.
func (g *queryGate) turnAway(w http.ResponseWriter, why string) {
	w.Header().Set("Retry-After", retryAfter)
	g.writeError(w, http.StatusServiceUnavailable, "too_many_queries", fmt.Sprintf("%s: retry after %s s", why, retryAfter))
}

// pacerKey carries a query's pacer in its context.
type pacerKey struct{}

// admit wraps a query endpoint. The body is read before a slot is taken, so a client
// sending it slowly (the server's read timeout cuts it off) holds no slot. An admitted
// query's connection deadlines become the query's: the server's shorter read timeout would
// cancel a long query's context, and a client reading the answer slowly must not keep the
// store's iterators open past the deadline.
func (g *queryGate) admit(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			if !acquire(r.Context(), g.bodies) {
				g.turnAway(w, fmt.Sprintf("%d query bodies are being read or served, as many as the agent holds at once", cap(g.bodies)))
				return
			}
			defer func() { <-g.bodies }()
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxQueryBody))
			if err != nil {
				g.bodyError(w, err)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		if !acquire(r.Context(), g.slots) {
			g.turnAway(w, fmt.Sprintf("%d queries are running, as many as agent.http.query.max.concurrency allows", cap(g.slots)))
			return
		}
		defer func() { <-g.slots }()
		deadline := time.Now().Add(g.timeout)
		ctx, cancel := context.WithDeadline(r.Context(), deadline)
		defer cancel()
		rc := http.NewResponseController(w)
		// Not every ResponseWriter has deadlines (httptest's has none); the context still ends the query.
		_ = rc.SetReadDeadline(deadline.Add(deadlineGrace))
		_ = rc.SetWriteDeadline(deadline.Add(deadlineGrace))
		p := &pacer{ctx: ctx, cpu: g.cpu}
		if err := p.run(); err != nil {
			g.writeError(w, err.status, err.code, err.msg)
			return
		}
		defer p.rest()
		h.ServeHTTP(&pacedWriter{ResponseWriter: w, p: p}, r.WithContext(context.WithValue(ctx, pacerKey{}, p)))
	})
}

// pacedWriter writes to the client without the query's CPU token: a client reading
// slowly blocks its own query, not the others, and its wait does not count as CPU time.
type pacedWriter struct {
	http.ResponseWriter
	p *pacer
}

func (w *pacedWriter) Write(b []byte) (int, error) {
	w.p.rest()
	n, err := w.ResponseWriter.Write(b)
	if e := w.p.run(); e != nil && err == nil {
		err = e
	}
	return n, err
}

func (w *pacedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// acquire takes a place in slots, waiting up to queueWait; false when none came free or
// the client went away.
func acquire(ctx context.Context, slots chan struct{}) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(queueWait)
	defer t.Stop()
	select {
	case slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (g *queryGate) bodyError(w http.ResponseWriter, err error) {
	var tooLarge *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooLarge):
		g.writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("the body is over %d bytes", tooLarge.Limit))
	case errors.As(err, &netErr) && netErr.Timeout():
		g.writeError(w, http.StatusRequestTimeout, "request_timeout", "the body did not arrive in time")
	default:
		g.writeError(w, http.StatusBadRequest, "bad_request", "reading the body: "+err.Error())
	}
}

// queryStopped is the error of a query whose context ended: its deadline passed, or the
// client went away (then nobody reads the error).
func queryStopped(ctx context.Context) *apiError {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &apiError{http.StatusServiceUnavailable, "query_timeout",
			"the query ran past its deadline (agent.http.query.timeout): narrow it, or page through it with limit and after"}
	}
	return &apiError{http.StatusServiceUnavailable, "query_cancelled", "the query was cancelled: " + context.Cause(ctx).Error()}
}

// pacer paces a query: a read ticks it for every entry, and every scanChunk entries it
// pauses, ending the query when its context is done, and else returning its CPU token and
// taking one again (see queryGate).
type pacer struct {
	ctx   context.Context
	cpu   chan time.Time // nil: the query is not paced (outside the gate)
	held  bool
	start time.Time // when the held token was taken
	n     int
}

// pacerOf is the pacer the gate gave a query.
func pacerOf(ctx context.Context) *pacer {
	if p, ok := ctx.Value(pacerKey{}).(*pacer); ok {
		return p
	}
	return &pacer{ctx: ctx}
}

// run takes a CPU token, waiting out its rest.
func (p *pacer) run() *apiError {
	if p.cpu == nil {
		return nil
	}
	select {
	case ready := <-p.cpu:
		if d := time.Until(ready); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-p.ctx.Done():
				t.Stop()
				p.cpu <- ready
				return queryStopped(p.ctx)
			}
		}
		p.held, p.start = true, time.Now()
		return nil
	case <-p.ctx.Done():
		return queryStopped(p.ctx)
	}
}

// rest returns the token, to rest queryRest times as long as it was held.
func (p *pacer) rest() {
	if !p.held {
		return
	}
	p.held = false
	now := time.Now()
	p.cpu <- now.Add(queryRest * now.Sub(p.start))
}

// tick counts one entry read and reports whether a chunk just ended.
func (p *pacer) tick() bool {
	p.n++
	if p.n < scanChunk {
		return false
	}
	p.n = 0
	return true
}

// pause ends a chunk: it stops the query when its context is done, and else returns the
// CPU token and takes one again.
func (p *pacer) pause() error {
	if p.ctx.Err() != nil {
		return queryStopped(p.ctx)
	}
	p.rest()
	if err := p.run(); err != nil {
		return err
	}
	return nil
}

// step is tick and, at the end of a chunk, pause.
func (p *pacer) step() error {
	if !p.tick() {
		return nil
	}
	return p.pause()
}
