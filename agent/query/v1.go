package query

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"slices"
	"strconv"
	"strings"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// Range limits: a page holds defaultRangeLimit items unless ?limit= says otherwise, and
// never more than maxRangeLimit.
const (
	defaultRangeLimit = 1000
	maxRangeLimit     = 10000
)

type apiHandler func(w http.ResponseWriter, r *http.Request) *apiError

// api refuses parameters the endpoint does not know (a typo would otherwise silently
// widen a query), and any given more than once (which one counts would be a guess: a
// client meaning limit=1000 and a proxy adding limit=1 differ), and turns the handler's
// error into the JSON error answer.
func (sv *server) api(params []string, h apiHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// r.URL.Query() drops a pair it cannot decode without a word: ?reverse=%zz would
		// read as no reverse, and ?limit=%zz&limit=5 as one limit.
		query, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			sv.opts.WriteError(w, http.StatusBadRequest, "bad_parameter", "query string: "+err.Error())
			return
		}
		for name, values := range query {
			if !slices.Contains(params, name) {
				known := "none"
				if len(params) > 0 {
					known = strings.Join(params, ", ")
				}
				sv.opts.WriteError(w, http.StatusBadRequest, "bad_parameter", fmt.Sprintf("unknown parameter %q (known: %s)", name, known))
				return
			}
			if len(values) > 1 {
				e := repeatedParam(name, len(values))
				sv.opts.WriteError(w, e.status, e.code, e.msg)
				return
			}
		}
		if e := h(w, r); e != nil {
			sv.opts.WriteError(w, e.status, e.code, e.msg)
		}
	})
}

// storeAt resolves a request's {store}, its ?isolation level and whether it allows stale
// stores (StaleParam).
func (sv *server) storeAt(r *http.Request) (*queryStore, state.IsolationLevel, *apiError) {
	s, e := sv.lookupStore(r.PathValue("store"))
	if e != nil {
		return nil, 0, e
	}
	level, e := sv.isolation(r.URL.Query().Get("isolation"))
	if e != nil {
		return nil, 0, e
	}
	if v := r.URL.Query().Get(StaleParam); v != "" {
		stale, err := strconv.ParseBool(v)
		if err != nil {
			return nil, 0, badParam(StaleParam, "%q is not true or false", v)
		}
		s.replicas.stale = stale
	}
	return s, level, nil
}

// keyValueStoreAt is storeAt for the key reads, which need a key-value store.
func (sv *server) keyValueStoreAt(r *http.Request) (*queryStore, state.IsolationLevel, *apiError) {
	s, level, e := sv.storeAt(r)
	if e == nil {
		e = s.requireKeyValue()
	}
	return s, level, e
}

// isolation reads an isolation level, defaulting to default.interactive.query.isolation.level.
func (sv *server) isolation(v string) (state.IsolationLevel, *apiError) {
	if v == "" {
		v = sv.opts.DefaultIsolation
	}
	if v == "" {
		return state.ReadUncommitted, nil
	}
	l, err := state.ParseIsolationLevel(v)
	if err != nil {
		return 0, badParam("isolation", "%v", err)
	}
	return l, nil
}

// listStores takes ?isolation= like every query endpoint, though the list does not
// depend on it.
func (sv *server) listStores(w http.ResponseWriter, r *http.Request) *apiError {
	if _, e := sv.isolation(r.URL.Query().Get("isolation")); e != nil {
		return e
	}
	c := sv.agent.Stores()
	if c == nil {
		return notReady(sv.agent.State())
	}
	var uncommitted map[string]int64
	if c.DB != nil {
		uncommitted = c.DB.UncommittedBytesByStore()
	}
	out := make([]StoreInfo, 0, len(c.Specs))
	for _, s := range c.Specs {
		info := InfoOf(s, c.PartitionsOf(s.Name))
		info.ApproximateNumUncommittedBytes = uncommitted[s.Name]
		out = append(out, info)
	}
	sv.opts.WriteJSON(w, http.StatusOK, out)
	return nil
}

// InfoOf is how GET /v1/stores shows a store of the given partitions.
func InfoOf(s pipeline.StoreSpec, partitions int32) StoreInfo {
	return StoreInfo{Name: s.Name, Type: s.Type.String(), KeySerde: serdeName(s.Serdes.Key), ValueSerde: serdeName(s.Serdes.Value), Partitions: partitions}
}

func serdeName(s interface{ Name() string }) string {
	if s == nil {
		return ""
	}
	return s.Name()
}

func (s *queryStore) item(key []byte, e kvEntry, p int32) (KVItem, error) {
	k, err := s.key.jsonValue(key)
	if err != nil {
		return KVItem{}, fmt.Errorf("store %s partition %d: key: %w", s.name, p, err)
	}
	v, err := s.value.jsonValue(e.value)
	if err != nil {
		return KVItem{}, fmt.Errorf("store %s partition %d: value of key %x: %w", s.name, p, key, err)
	}
	it := KVItem{Key: k, Value: v, Timestamp: e.ts, Partition: p}
	if s.spec.Headers {
		it.Headers = headersJSON(e.headers)
	}
	return it, nil
}

func (s *queryStore) requireKeyValue() *apiError {
	if s.isKeyValue() {
		return nil
	}
	return &apiError{http.StatusBadRequest, "wrong_store_type", fmt.Sprintf(
		"store %s is a %s store: key reads need a key-value store; read it with /v1/stores/%s/windows/{key}", s.name, s.typeName, s.name)}
}

func (sv *server) getKey(w http.ResponseWriter, r *http.Request) *apiError {
	s, level, e := sv.keyValueStoreAt(r)
	if e != nil {
		return e
	}
	text := r.PathValue("key")
	key, err := s.key.parse(text, nil)
	if err != nil {
		return badParam("key", "%v", err)
	}
	order, e := s.keyOrder(w, r, key)
	if e != nil {
		return e
	}
	for _, p := range order {
		if e := s.replicas.check(p); e != nil {
			return e
		}
		kp, err := s.kv(p, level)
		if err != nil {
			return storeError(err)
		}
		entry, ok, err := kp.get(key)
		if err != nil {
			return storeError(err)
		}
		if ok {
			item, err := s.item(key, entry, p)
			if err != nil {
				return storeError(err)
			}
			item.Lags = s.replicas.lags
			sv.opts.WriteJSON(w, http.StatusOK, item)
			return nil
		}
	}
	return &apiError{http.StatusNotFound, "key_not_found", fmt.Sprintf("key %s is not in store %s (%s)%s", quoted(text), s.name, level, s.unsearched(len(order)))}
}

// countKeys is approximateNumEntries of a key-value store (exact: it walks the store) and,
// beyond Kafka Streams' IQv1, the same count of the other stores: a versioned store's keys
// with a live latest version, a window store's windows, a session store's sessions. In a
// streams group the agents running the other partitions count theirs meanwhile, and the
// counts are summed.
func (sv *server) countKeys(w http.ResponseWriter, r *http.Request) *apiError {
	s, level, e := sv.storeAt(r)
	var plan readPlan
	if e == nil {
		plan, e = s.planAll(r.URL.Query())
	}
	if e != nil {
		return e
	}
	pace := pacerOf(r.Context())
	var peers *peerReads
	if len(plan.peers) > 0 {
		peers = sv.startPeers(r, s.name, plan.peers, level)
		defer peers.close()
	}
	// The count walks the store, so it is a paced walk like a range read.
	var n int64
	var err error
	switch {
	case isVersioned(s.spec):
		n, err = countMerge(s.openVersionedMerge(pace, level, plan.local, nil, nil, false))
	case s.isKeyValue():
		n, err = countMerge(s.openMerge(pace, level, plan.local, nil, nil, false))
	default:
		n, err = s.countWindows(pace, level, plan.local)
	}
	if err != nil {
		return asAPIError(err)
	}
	if peers != nil {
		resps, e := peers.wait(pace)
		if e != nil {
			return e
		}
		for i, resp := range resps {
			c, e := peerCount(resp, s.name, plan.peers[i], &s.replicas.lags)
			if e != nil {
				return e
			}
			n += c
		}
	}
	sv.opts.WriteJSON(w, http.StatusOK, Count{Count: n, Lags: s.replicas.lags})
	return nil
}

// countMerge counts the entries of a walk over every partition.
func countMerge[C kvCursor](m *kvMerge[C], err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	defer m.close()
	var n int64
	for i := m.head(); i >= 0; i = m.head() {
		n++
		m.advance(i)
	}
	return n, m.err
}

// countWindows counts the windows (or sessions) of the given partitions.
func (s *queryStore) countWindows(pace *pacer, level state.IsolationLevel, parts []int32) (int64, error) {
	var n int64
	for _, p := range parts {
		it, err := s.allWindows(p, level)
		if err != nil {
			return 0, err
		}
		for it.Next() {
			n++
			if err := pace.step(); err != nil {
				it.Close()
				return 0, err
			}
		}
		err = it.Err()
		it.Close()
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}

func asAPIError(err error) *apiError {
	var e *apiError
	if errors.As(err, &e) {
		return e
	}
	return storeError(err)
}

// rangeParams are the parsed parameters of a range read.
type rangeParams struct {
	from, to, prefix, after []byte
	reverse                 bool
	limit                   int
}

// parseRange reads a range's parameters. An empty one is one left out, as every optional
// parameter of the query endpoints is (?from=&to= as the windows' bounds, ?reverse=,
// ?limit=): a form or a client filling in a URL template sends them so. The empty key is
// so no bound, which a string serde's "" as a lower bound is anyway; it is read at its own
// path (/keys/).
func (s *queryStore) parseRange(q url.Values) (rangeParams, *apiError) {
	rp := rangeParams{limit: defaultRangeLimit}
	for _, f := range []struct {
		name string
		dst  *[]byte
	}{{"from", &rp.from}, {"to", &rp.to}, {"prefix", &rp.prefix}, {"after", &rp.after}} {
		if q.Get(f.name) == "" {
			continue
		}
		b, err := s.key.parse(q.Get(f.name), nil)
		if err != nil {
			return rp, badParam(f.name, "%v", err)
		}
		*f.dst = b
	}
	if v := q.Get("reverse"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return rp, badParam("reverse", "%q is not true or false", v)
		}
		rp.reverse = b
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxRangeLimit {
			return rp, badParam("limit", "%q is not a whole number from 1 to %d", v, maxRangeLimit)
		}
		rp.limit = n
	}
	if rp.prefix != nil && (rp.from != nil || rp.to != nil) {
		return rp, badParam("prefix", "cannot be combined with from or to (prefixScan or range, as in Kafka Streams)")
	}
	if rp.prefix != nil && rp.reverse {
		return rp, badParam("prefix", "prefixScan iterates in ascending key order only, as in Kafka Streams; drop reverse")
	}
	return rp, nil
}

// bounds folds prefix and the pagination cursor into one [lo, hi] byte range.
func (rp rangeParams) bounds() (lo, hi []byte) {
	lo, hi = rp.from, rp.to
	if rp.prefix != nil {
		lo = rp.prefix
	}
	if rp.after != nil {
		if rp.reverse && (hi == nil || string(rp.after) < string(hi)) {
			hi = rp.after
		}
		if !rp.reverse && (lo == nil || string(rp.after) > string(lo)) {
			lo = rp.after
		}
	}
	return lo, hi
}

// rangeKeys reads a range of a key-value store. In a streams group the agents running the
// other partitions each answer theirs, and their answers are merged with this agent's.
func (sv *server) rangeKeys(w http.ResponseWriter, r *http.Request) *apiError {
	s, level, e := sv.keyValueStoreAt(r)
	if e != nil {
		return e
	}
	q := r.URL.Query()
	rp, e := s.parseRange(q)
	var plan readPlan
	if e == nil {
		plan, e = s.planAll(q)
	}
	if e != nil {
		return e
	}
	lo, hi := rp.bounds()
	pace := pacerOf(r.Context())
	var peers *peerReads
	if len(plan.peers) > 0 {
		peers = sv.startPeers(r, s.name, plan.peers, level)
		defer peers.close()
	}
	var next string
	var out *itemStream
	var err error
	if isVersioned(s.spec) {
		// Each key's latest version, as IQv2's RangeQuery answers on a versioned store.
		m, merr := s.openVersionedMerge(pace, level, plan.local, lo, hi, rp.reverse)
		if merr != nil {
			return asAPIError(merr)
		}
		defer m.close()
		entry := func(it *state.VersionedRangeIterator) (kvEntry, error) {
			rec := it.Record()
			return kvEntry{value: rec.Value, ts: rec.Timestamp}, nil
		}
		if peers != nil {
			out, next, err = sv.fanOutRange(w, s, plan, peers, pace, rp, newLocalSource(s, m, rp, entry))
		} else {
			out = startItems(w)
			next, err = streamRange(s, out, m, rp, plan.forwarded, entry)
		}
	} else {
		m, merr := s.openMerge(pace, level, plan.local, lo, hi, rp.reverse)
		if merr != nil {
			return asAPIError(merr)
		}
		defer m.close()
		entry := func(it *state.KeyValueIterator) (kvEntry, error) {
			e := kvEntry{value: it.Value(), ts: it.Timestamp()}
			if s.spec.Headers {
				var herr error
				e.headers, herr = it.Headers()
				return e, herr
			}
			return e, nil
		}
		if peers != nil {
			out, next, err = sv.fanOutRange(w, s, plan, peers, pace, rp, newLocalSource(s, m, rp, entry))
		} else {
			out = startItems(w)
			next, err = streamRange(s, out, m, rp, plan.forwarded, entry)
		}
	}
	if out == nil {
		// Refused before the answer started.
		return asAPIError(err)
	}
	end := PageEnd{Lags: s.replicas.lags}
	switch {
	case err != nil:
		// The status line is gone: the error follows the items that were read.
		e := asAPIError(err)
		end.Error, end.Code = e.msg, e.code
	case next != "":
		end.Next = next
	}
	_ = out.end(end)
	return nil
}

// fanOutRange merges this agent's partitions (local) with the other agents' answers once
// every agent's answer has started and given its first item; a refusal before then is the
// read's error (no out), one after it the page's. With staleStores the other agents'
// answers are read to their end, where their lags are.
func (sv *server) fanOutRange(w http.ResponseWriter, s *queryStore, plan readPlan, peers *peerReads, pace *pacer, rp rangeParams, local rangeSource) (out *itemStream, next string, err error) {
	resps, e := peers.wait(pace)
	if e != nil {
		return nil, "", e
	}
	srcs := []rangeSource{local}
	var remote []*peerSource
	for i, resp := range resps {
		ps, e := newPeerSource(resp, s.name, plan.peers[i], rp, sv.peerItemBytes())
		if e != nil {
			return nil, "", e
		}
		srcs = append(srcs, ps)
		remote = append(remote, ps)
	}
	m, err := startMerge(srcs)
	if err != nil {
		return nil, "", err
	}
	out = startItems(w)
	next, err = m.write(s, out, rp)
	for _, ps := range remote {
		if err == nil && s.replicas.stale {
			err = ps.drain()
		}
		addLags(&s.replicas.lags, ps.end.Lags)
	}
	return out, next, err
}

// streamRange writes up to rp.limit entries in merged key order, each read by entry, and
// returns the cursor to continue from when it stopped early; rawKeys adds each item's
// serialised key (a read restricted by PartitionsParam). Equal keys from several
// partitions are never split across pages, since the cursor skips the key. Nor does a page
// end on the empty key, which no cursor can name (an empty ?after= is no cursor, an empty
// next no page more): it takes the next key's entries too.
func streamRange[C kvCursor](s *queryStore, out *itemStream, m *kvMerge[C], rp rangeParams, rawKeys bool, entry func(C) (kvEntry, error)) (string, error) {
	var last []byte
	n := 0
	for {
		i := m.head()
		if i < 0 {
			return "", m.err
		}
		it := m.its[i]
		k := it.Key()
		switch {
		case rp.after != nil && string(k) == string(rp.after):
			m.advance(i)
			continue
		case rp.prefix != nil && !strings.HasPrefix(string(k), string(rp.prefix)):
			return "", nil
		case n >= rp.limit && string(k) != string(last) && len(last) > 0:
			return s.key.text(last)
		}
		e, err := entry(it)
		if err != nil {
			return "", err
		}
		item, err := s.item(k, e, m.parts[i])
		if err != nil {
			return "", err
		}
		if rawKeys {
			item.RawKey = k
		}
		if err := out.add(item); err != nil {
			return "", err
		}
		last = append(last[:0], k...)
		n++
		m.advance(i)
	}
}

// itemStream writes {"items": [...], ...} one item at a time, so a large range is never
// held in memory.
type itemStream struct {
	bw  *bufio.Writer
	buf bytes.Buffer // one encoded item: an item that fails to encode writes nothing
	enc *json.Encoder
	n   int
}

func startItems(w http.ResponseWriter) *itemStream {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	s := &itemStream{bw: bufio.NewWriter(w)}
	_, _ = s.bw.WriteString(`{"items":[`)
	s.enc = json.NewEncoder(&s.buf)
	s.enc.SetEscapeHTML(false)
	return s
}

func (s *itemStream) add(v any) error {
	s.buf.Reset()
	if err := s.enc.Encode(v); err != nil {
		return err
	}
	if s.n > 0 {
		_ = s.bw.WriteByte(',')
	}
	s.n++
	_, err := s.bw.Write(s.buf.Bytes())
	return err
}

// addRaw adds an item already encoded (as add encodes it, without its newline).
func (s *itemStream) addRaw(item []byte) error {
	if s.n > 0 {
		_ = s.bw.WriteByte(',')
	}
	s.n++
	_, _ = s.bw.Write(item)
	return s.bw.WriteByte('\n')
}

// end closes the list and adds the page's end, the fields of Page after its items.
func (s *itemStream) end(end PageEnd) error {
	_ = s.bw.WriteByte(']')
	if b, _ := json.Marshal(end); len(b) > 2 {
		_ = s.bw.WriteByte(',')
		_, _ = s.bw.Write(b[1 : len(b)-1])
	}
	_, _ = s.bw.WriteString("}\n")
	return s.bw.Flush()
}
