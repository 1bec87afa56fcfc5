package query

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/stoatflow/stoatflow/state"
)

// readPlan is who answers each partition of a read over a whole store (a range, a count):
// this agent the partitions it holds, and in a streams group the agents running the others
// (or keeping standby copies of those no agent runs), each asked for its own with
// PartitionsParam.
type readPlan struct {
	local []int32
	peers []peerShare // sorted by host
	// forwarded: the read came restricted by PartitionsParam, so items carry their
	// serialised key for the agent merging them.
	forwarded bool
}

// peerShare is the partitions of a store one other agent of the streams group runs, or
// keeps standby copies of for a stale read.
type peerShare struct {
	host  string
	parts []int32
}

// planAll decides who answers each partition of s for a read over the whole store. A read
// restricted by PartitionsParam is answered here or not at all (it was forwarded once
// already); otherwise, in a streams group, each partition another agent runs goes to that
// agent, and a partition no agent can be named for fails the read: never a partial answer.
// A read allowing stale stores sends a partition no agent runs now (its task is moving, as
// while the group takes over from an agent that died) to an agent keeping a standby copy,
// as Kafka Streams applications read standbys then; a partition whose agent is named but
// does not answer still fails the read, as it may be running there.
func (s *queryStore) planAll(q url.Values) (readPlan, *apiError) {
	rs := s.replicas
	if q.Has(PartitionsParam) {
		parts, e := s.parsePartitions(q.Get(PartitionsParam))
		if e != nil {
			return readPlan{}, e
		}
		for _, p := range parts {
			if e := rs.check(p); e != nil {
				return readPlan{}, e
			}
		}
		return readPlan{local: parts, forwarded: true}, nil
	}
	var plan readPlan
	byHost := map[string][]int32{}
	pd := rs.placed
	for p := range s.partitions {
		if !pd.spread || rs.readable(p) {
			if e := rs.check(p); e != nil {
				return readPlan{}, e
			}
			plan.local = append(plan.local, p)
			continue
		}
		if pd.pl == nil {
			return readPlan{}, notPlaced()
		}
		switch owner := pd.pl.Owner(s.name, p); owner {
		case "":
			standby := rs.standbyPeer(p)
			if standby == "" {
				return readPlan{}, unowned(s.name, p)
			}
			byHost[standby] = append(byHost[standby], p)
		case pd.pl.Self:
			return readPlan{}, movingHere(s.name, p)
		default:
			byHost[owner] = append(byHost[owner], p)
		}
	}
	for _, h := range slices.Sorted(maps.Keys(byHost)) {
		plan.peers = append(plan.peers, peerShare{h, byHost[h]})
	}
	return plan, nil
}

// standbyPeer is the first other agent keeping a standby copy of partition p, when the
// caller allows stale stores; "" for none.
func (rs *replicas) standbyPeer(p int32) string {
	if !rs.stale {
		return ""
	}
	pd := rs.placed
	for _, h := range pd.pl.StandbyHosts(rs.store, p) {
		if h != pd.pl.Self {
			return h
		}
	}
	return ""
}

// parsePartitions reads PartitionsParam: distinct partition numbers of the store, by commas.
func (s *queryStore) parsePartitions(v string) ([]int32, *apiError) {
	var out []int32
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil || n < 0 || n >= int64(s.partitions) {
			return nil, badParam(PartitionsParam, "%q is not a partition of store %s (0 to %d)", f, s.name, s.partitions-1)
		}
		out = append(out, int32(n))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func joinPartitions(ps []int32) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = strconv.Itoa(int(p))
	}
	return strings.Join(out, ",")
}

// peerUnavailable is the refusal of a read one of whose agents did not answer: the answer
// would miss that agent's partitions.
func peerUnavailable(store string, share peerShare, why string) *apiError {
	return &apiError{http.StatusServiceUnavailable, "not_available", fmt.Sprintf(
		"partitions %v of store %s are not available: the agent at %s that runs them %s; an answer without them would be partial: retry",
		share.parts, store, share.host, why)}
}

// peerReads are the requests of one read to the other agents, sent together.
type peerReads struct {
	cancel context.CancelFunc
	done   chan struct{}
	resps  []*http.Response
	errs   []*apiError
}

// startPeers sends the read r, restricted to each share's partitions, to the agents running
// them, at the isolation level this agent resolved, with the caller's token and its other
// parameters (staleStores, bounds, limit, cursor). Each request ends with the query's
// deadline (agent.http.query.timeout).
func (sv *server) startPeers(r *http.Request, store string, shares []peerShare, level state.IsolationLevel) *peerReads {
	ctx, cancel := context.WithCancel(r.Context())
	pr := &peerReads{cancel: cancel, done: make(chan struct{}), resps: make([]*http.Response, len(shares)), errs: make([]*apiError, len(shares))}
	r = r.WithContext(ctx)
	var wg sync.WaitGroup
	for i, share := range shares {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr.resps[i], pr.errs[i] = sv.peerRead(r, store, share, level)
		}()
	}
	go func() {
		wg.Wait()
		close(pr.done)
	}()
	return pr
}

func (sv *server) peerRead(r *http.Request, store string, share peerShare, level state.IsolationLevel) (*http.Response, *apiError) {
	q := url.Values{}
	for k, v := range r.URL.Query() {
		q[k] = v
	}
	q.Set("isolation", level.String())
	q.Set(PartitionsParam, joinPartitions(share.parts))
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, scheme+"://"+share.host+r.URL.EscapedPath()+"?"+q.Encode(), nil)
	if err != nil {
		return nil, peerUnavailable(store, share, "cannot be asked: "+err.Error())
	}
	if auth := r.Header.Get("Authorization"); auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := sv.peers.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, peerUnavailable(store, share, "did not answer before the query's deadline (agent.http.query.timeout)")
		}
		return nil, peerUnavailable(store, share, "did not answer: "+err.Error())
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	var e struct{ Error, Code string }
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(body, &e) != nil || e.Error == "" {
		return nil, peerUnavailable(store, share, "answered "+resp.Status)
	}
	return nil, peerUnavailable(store, share, fmt.Sprintf("answered %s %s: %s", resp.Status, e.Code, e.Error))
}

// wait waits for every agent's answer to start, without the query's CPU token (each request
// ends with the query's deadline); the first refusal in host order fails the read, naming
// its agent.
func (pr *peerReads) wait(pace *pacer) ([]*http.Response, *apiError) {
	pace.rest()
	<-pr.done
	for _, e := range pr.errs {
		if e != nil {
			return nil, e
		}
	}
	if e := pace.run(); e != nil {
		return nil, e
	}
	return pr.resps, nil
}

// close ends the requests (a read that failed here does not wait for the other agents)
// and releases their answers.
func (pr *peerReads) close() {
	pr.cancel()
	<-pr.done
	for _, resp := range pr.resps {
		if resp != nil {
			resp.Body.Close()
		}
	}
}

// A forwarded read is bounded by the query's deadline, and what it reads of each other
// agent's answer by bytes too, so an agent answering without end (a broken or hostile peer)
// cannot grow this agent's memory until the deadline: past a bound the read fails, naming
// the agent, and its connection is closed.
const (
	// peerItemFactor × the largest entry of a logged store (producer.max.request.size, as
	// its changelog record) bounds the JSON of a range item: a string key or value escapes a
	// byte to at most 6 (\u00XX), and the item adds the key again as base64 (4/3).
	peerItemFactor = 8
	// peerItemSlack covers an item's field names, timestamp and partition, and the end of a
	// range (code, error, lags and next).
	peerItemSlack = 64 << 10
	// A count's answer is a number and the lags of the standby copies read: a few hundred
	// bytes per partition at most.
	peerCountBase    = 4 << 10
	peerCountPerPart = 256
)

// peerItemBytes is the most an item of another agent's range answer may take.
func (sv *server) peerItemBytes() int64 {
	rec := sv.opts.MaxRecordBytes
	if rec <= 0 {
		rec = 1 << 20
	}
	return peerItemFactor*rec + peerItemSlack
}

// peerCountBytes is the most another agent's count of parts partitions may take.
func peerCountBytes(parts int) int64 { return peerCountBase + peerCountPerPart*int64(parts) }

// budgetReader reads at most left more bytes of an answer, then fails with tooLargeError.
// A JSON decoder reading through it holds at most what it read ahead before the budget was
// set and the budget itself.
type budgetReader struct {
	r     io.Reader
	left  int64
	limit int64
	what  string
}

func (b *budgetReader) set(limit int64, what string) { b.left, b.limit, b.what = limit, limit, what }

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, &tooLargeError{b.what, b.limit}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// tooLargeError is an answer of another agent over its bound.
type tooLargeError struct {
	what  string
	limit int64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("answered %s over %d bytes", e.what, e.limit)
}

// peerCount reads an agent's count of its partitions, adding its lags to lags.
func peerCount(resp *http.Response, store string, share peerShare, lags *Lags) (int64, *apiError) {
	body := &budgetReader{r: resp.Body}
	body.set(peerCountBytes(len(share.parts)), "a count")
	var c Count
	if err := json.NewDecoder(body).Decode(&c); err != nil {
		if tl := (*tooLargeError)(nil); errors.As(err, &tl) {
			return 0, peerUnavailable(store, share, tl.Error())
		}
		return 0, peerUnavailable(store, share, "answered a count that could not be read: "+err.Error())
	}
	addLags(lags, c.Lags)
	return c.Count, nil
}

func addLags(dst *Lags, src Lags) {
	if len(src) == 0 {
		return
	}
	if *dst == nil {
		*dst = Lags{}
	}
	maps.Copy(*dst, src)
}

// rangeSource yields the items of a range in key order (descending when reverse; equal keys
// in partition order), each encoded, with its serialised key and partition.
type rangeSource interface {
	next() (key []byte, item json.RawMessage, p int32, ok bool, err error)
	// cut reports, once the source is done, whether its answer stopped at the limit with more
	// to come.
	cut() bool
}

// localSource is this agent's partitions, walked as a single-agent range is (streamRange).
type localSource[C kvCursor] struct {
	s     *queryStore
	m     *kvMerge[C]
	rp    rangeParams
	entry func(C) (kvEntry, error)
	buf   bytes.Buffer
	enc   *json.Encoder
}

func newLocalSource[C kvCursor](s *queryStore, m *kvMerge[C], rp rangeParams, entry func(C) (kvEntry, error)) *localSource[C] {
	l := &localSource[C]{s: s, m: m, rp: rp, entry: entry}
	l.enc = json.NewEncoder(&l.buf)
	l.enc.SetEscapeHTML(false)
	return l
}

func (l *localSource[C]) next() ([]byte, json.RawMessage, int32, bool, error) {
	for {
		i := l.m.head()
		if i < 0 {
			return nil, nil, 0, false, l.m.err
		}
		it := l.m.its[i]
		k := it.Key()
		switch {
		case l.rp.after != nil && bytes.Equal(k, l.rp.after):
			l.m.advance(i)
			continue
		case l.rp.prefix != nil && !bytes.HasPrefix(k, l.rp.prefix):
			return nil, nil, 0, false, nil
		}
		e, err := l.entry(it)
		if err != nil {
			return nil, nil, 0, false, err
		}
		p := l.m.parts[i]
		item, err := l.s.item(k, e, p)
		if err != nil {
			return nil, nil, 0, false, err
		}
		// The item may alias the iterator's bytes: encode it before the iterator moves.
		l.buf.Reset()
		if err := l.enc.Encode(item); err != nil {
			return nil, nil, 0, false, err
		}
		key := bytes.Clone(k)
		l.m.advance(i)
		return key, bytes.Clone(bytes.TrimRight(l.buf.Bytes(), "\n")), p, true, nil
	}
}

func (l *localSource[C]) cut() bool { return false }

// peerSource is another agent's answer to a range restricted to its partitions, read as it
// streams in. Each item, and the end of the answer, may take up to itemBytes; the agent
// answers at most maxItems items, each of its partitions, in the order asked (an agent
// answering more, or out of order, is broken), so the merged page holds no more items than
// one agent's would.
type peerSource struct {
	store     string
	share     peerShare
	body      *budgetReader
	dec       *json.Decoder
	itemBytes int64
	maxItems  int
	reverse   bool
	n         int
	last      []byte
	lastP     int32
	end       PageEnd
	done      bool
}

// peerItem is an item of a peer's answer, its key and value kept as they were written.
type peerItem struct {
	Key       json.RawMessage `json:"key"`
	Value     json.RawMessage `json:"value"`
	Timestamp int64           `json:"timestamp"`
	Partition int32           `json:"partition"`
	Headers   json.RawMessage `json:"headers"`
	RawKey    []byte          `json:"rawKey"`
}

func newPeerSource(resp *http.Response, store string, share peerShare, rp rangeParams, itemBytes int64) (*peerSource, *apiError) {
	ps := &peerSource{store: store, share: share, body: &budgetReader{r: resp.Body}, itemBytes: itemBytes,
		// Its page ends at the limit but never between equal keys (one per partition), nor
		// on the empty key: a page of only empty keys (at most one per partition) takes the
		// next key's too.
		maxItems: max(rp.limit, len(share.parts)) + len(share.parts) - 1, reverse: rp.reverse}
	ps.dec = json.NewDecoder(ps.body)
	ps.body.set(itemBytes, "the start of a range")
	for _, want := range []any{json.Delim('{'), "items", json.Delim('[')} {
		if t, err := ps.dec.Token(); err != nil || t != want {
			return nil, ps.broken(fmt.Errorf("not a page of items (at %v: %v)", t, err))
		}
	}
	return ps, nil
}

func (ps *peerSource) broken(err error) *apiError {
	if errors.Is(err, context.DeadlineExceeded) {
		return peerUnavailable(ps.store, ps.share, "did not answer in full before the query's deadline (agent.http.query.timeout)")
	}
	if tl := (*tooLargeError)(nil); errors.As(err, &tl) {
		return peerUnavailable(ps.store, ps.share, fmt.Sprintf("%v (the bound is %d times producer.max.request.size, the largest entry of a logged store, plus %d KiB)",
			tl, peerItemFactor, peerItemSlack>>10))
	}
	return peerUnavailable(ps.store, ps.share, "answered a range that could not be read: "+err.Error())
}

// check refuses an item beyond the answer's bounds: past maxItems, of a partition not
// asked for, or not after the previous item in the range's order.
func (ps *peerSource) check(it *peerItem) *apiError {
	if ps.n++; ps.n > ps.maxItems {
		return peerUnavailable(ps.store, ps.share, fmt.Sprintf("answered more than the %d items a page of its partitions holds", ps.maxItems))
	}
	if !slices.Contains(ps.share.parts, it.Partition) {
		return peerUnavailable(ps.store, ps.share, fmt.Sprintf("answered an item of partition %d, which it was not asked for", it.Partition))
	}
	c := bytes.Compare(it.RawKey, ps.last)
	if ps.reverse {
		c = -c
	}
	if ps.n > 1 && (c < 0 || (c == 0 && it.Partition <= ps.lastP)) {
		return peerUnavailable(ps.store, ps.share, "answered items out of the range's order")
	}
	ps.last, ps.lastP = it.RawKey, it.Partition
	return nil
}

func (ps *peerSource) next() ([]byte, json.RawMessage, int32, bool, error) {
	if ps.done {
		return nil, nil, 0, false, nil
	}
	ps.body.set(ps.itemBytes, "a range item")
	if ps.dec.More() {
		var it peerItem
		if err := ps.dec.Decode(&it); err != nil {
			return nil, nil, 0, false, ps.broken(err)
		}
		if e := ps.check(&it); e != nil {
			return nil, nil, 0, false, e
		}
		// The item as KVItem encodes it, without RawKey: its fields are the agent's own
		// encoding, so they are written as they came.
		b := make([]byte, 0, len(it.Key)+len(it.Value)+len(it.Headers)+64)
		b = append(append(append(b, `{"key":`...), it.Key...), `,"value":`...)
		b = append(append(b, it.Value...), `,"timestamp":`...)
		b = append(strconv.AppendInt(b, it.Timestamp, 10), `,"partition":`...)
		b = strconv.AppendInt(b, int64(it.Partition), 10)
		if len(it.Headers) > 0 {
			b = append(append(b, `,"headers":`...), it.Headers...)
		}
		return it.RawKey, append(b, '}'), it.Partition, true, nil
	}
	ps.done = true
	ps.body.what = "the end of a range"
	if _, err := ps.dec.Token(); err != nil {
		return nil, nil, 0, false, ps.broken(err)
	}
	for ps.dec.More() {
		t, err := ps.dec.Token()
		if err != nil {
			return nil, nil, 0, false, ps.broken(err)
		}
		var dst any = new(json.RawMessage)
		switch t {
		case "code":
			dst = &ps.end.Code
		case "error":
			dst = &ps.end.Error
		case "lags":
			dst = &ps.end.Lags
		case "next":
			dst = &ps.end.Next
		}
		if err := ps.dec.Decode(dst); err != nil {
			return nil, nil, 0, false, ps.broken(err)
		}
	}
	if ps.end.Error != "" {
		// The agent's read stopped after its answer started: its error, naming it.
		return nil, nil, 0, false, &apiError{http.StatusServiceUnavailable, ps.end.Code, fmt.Sprintf(
			"the agent at %s reading partitions %v of store %s: %s", ps.share.host, ps.share.parts, ps.store, ps.end.Error)}
	}
	return nil, nil, 0, false, nil
}

func (ps *peerSource) cut() bool { return ps.end.Next != "" }

// drain reads the rest of a source: the lags follow its items.
func (ps *peerSource) drain() error {
	for {
		_, _, _, ok, err := ps.next()
		if err != nil || !ok {
			return err
		}
	}
}

// sourceMerge merges range sources in key order: equal keys in partition order.
type sourceMerge struct {
	srcs  []rangeSource
	heads []sourceHead
	// cut: a source's own answer stopped at the limit with more to come.
	cut bool
}

type sourceHead struct {
	key  []byte
	item json.RawMessage
	p    int32
	ok   bool
}

// startMerge reads the first item of every source, so that a source failing there fails
// the read before its answer starts.
func startMerge(srcs []rangeSource) (*sourceMerge, error) {
	m := &sourceMerge{srcs: srcs, heads: make([]sourceHead, len(srcs))}
	for i := range srcs {
		if err := m.fill(i); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *sourceMerge) fill(i int) error {
	k, item, p, ok, err := m.srcs[i].next()
	if err != nil {
		return err
	}
	m.heads[i] = sourceHead{k, item, p, ok}
	if !ok && m.srcs[i].cut() {
		m.cut = true
	}
	return nil
}

// write writes up to rp.limit items in merged key order and returns the cursor to continue
// from when it stopped early, as streamRange does over one agent's partitions: equal keys
// are never split across pages. A source whose own answer was cut at the limit holds
// nothing beyond its last key, so once it runs out the page ends at the next key that
// differs: the next page asks every agent again from there.
func (m *sourceMerge) write(s *queryStore, out *itemStream, rp rangeParams) (string, error) {
	var last []byte
	n := 0
	for {
		best := -1
		for i, h := range m.heads {
			if !h.ok {
				continue
			}
			if best < 0 {
				best = i
				continue
			}
			c := bytes.Compare(h.key, m.heads[best].key)
			if rp.reverse {
				c = -c
			}
			if c < 0 || (c == 0 && h.p < m.heads[best].p) {
				best = i
			}
		}
		if best < 0 {
			if m.cut {
				return s.key.text(last)
			}
			return "", nil
		}
		h := m.heads[best]
		// A page does not end on the empty key, which no cursor names (streamRange); a cut
		// source's last key never is, so m.cut comes with a last key that is not.
		if (n >= rp.limit || m.cut) && !bytes.Equal(h.key, last) && len(last) > 0 {
			return s.key.text(last)
		}
		if err := out.addRaw(h.item); err != nil {
			return "", err
		}
		last = h.key
		n++
		if err := m.fill(best); err != nil {
			return "", err
		}
	}
}
