package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// Kafka Streams' FailureReason names (KS/query/FailureReason.java).
const (
	failUnknownQueryType = "UNKNOWN_QUERY_TYPE"
	failNotActive        = "NOT_ACTIVE"
	failNotUpToBound     = "NOT_UP_TO_BOUND"
	failNotPresent       = "NOT_PRESENT"
	failStoreException   = "STORE_EXCEPTION"
)

// v2Request is a StateQueryRequest: inStore(store).withQuery(query), optional partitions
// (default: all), position bound, requireActive and, as KIP-892 adds, an isolation level.
type v2Request struct {
	Store         string                      `json:"store"`
	Query         v2Query                     `json:"query"`
	Partitions    []int32                     `json:"partitions"`
	Isolation     string                      `json:"isolation"`
	PositionBound map[string]map[string]int64 `json:"positionBound"`
	RequireActive bool                        `json:"requireActive"`
}

// v2Query holds the fields of every query type; each type reads the ones its Java builder
// takes.
type v2Query struct {
	Type       string          `json:"type"`
	Key        json.RawMessage `json:"key"`
	Lower      json.RawMessage `json:"lower"`
	Upper      json.RawMessage `json:"upper"`
	Descending bool            `json:"descending"`
	TimeFrom   *msTime         `json:"timeFrom"`
	TimeTo     *msTime         `json:"timeTo"`
	AsOf       *msTime         `json:"asOf"`
	FromTime   *msTime         `json:"fromTime"`
	ToTime     *msTime         `json:"toTime"`
	SkipCache  bool            `json:"skipCache"`
}

// msTime is a time given as epoch milliseconds or as an RFC 3339 string (Java's Instant).
type msTime int64

func (t *msTime) UnmarshalJSON(b []byte) error {
	var n int64
	if err := json.Unmarshal(b, &n); err == nil {
		*t = msTime(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%s is neither epoch milliseconds nor an RFC 3339 time", b)
	}
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("%q is neither epoch milliseconds nor an RFC 3339 time", s)
	}
	*t = msTime(tm.UnixMilli())
	return nil
}

func timeOr(t *msTime, def int64) int64 {
	if t == nil {
		return def
	}
	return int64(*t)
}

// v2Support is Kafka Streams' support matrix (KSS/StoreQueryUtils.java, Metered*.java)
// plus KIP-1356's headers-aware queries, which only headers-aware stores answer.
var v2Support = map[string]func(s pipeline.StoreSpec) bool{
	"KeyQuery":                               isKV,
	"RangeQuery":                             isKV,
	"TimestampedKeyQuery":                    isTimestampedKV,
	"TimestampedRangeQuery":                  isTimestampedKV,
	"TimestampedKeyWithHeadersQuery":         func(s pipeline.StoreSpec) bool { return isTimestampedKV(s) && s.Headers },
	"TimestampedRangeWithHeadersQuery":       func(s pipeline.StoreSpec) bool { return isTimestampedKV(s) && s.Headers },
	"WindowKeyQuery":                         isWindow,
	"WindowRangeQuery":                       func(s pipeline.StoreSpec) bool { return isWindow(s) || s.Type == pipeline.SessionStoreType },
	"TimestampedWindowKeyWithHeadersQuery":   func(s pipeline.StoreSpec) bool { return isWindow(s) && s.Headers },
	"TimestampedWindowRangeWithHeadersQuery": func(s pipeline.StoreSpec) bool { return isWindow(s) && s.Headers },
	"VersionedKeyQuery":                      isVersioned,
	"MultiVersionedKeyQuery":                 isVersioned,
}

func isKV(s pipeline.StoreSpec) bool {
	return s.Type == pipeline.KeyValueStoreType || s.Type == pipeline.TimestampedKeyValueStoreType || isVersioned(s)
}
func isTimestampedKV(s pipeline.StoreSpec) bool {
	return s.Type == pipeline.TimestampedKeyValueStoreType
}
func isWindow(s pipeline.StoreSpec) bool {
	return s.Type == pipeline.WindowStoreType || s.Type == pipeline.TimestampedWindowStoreType
}
func isVersioned(s pipeline.StoreSpec) bool { return s.Type == pipeline.VersionedKeyValueStoreType }

// v2Plan is a checked query, its keys serialised.
type v2Plan struct {
	q            v2Query
	key          []byte
	lower, upper []byte
	// unknown is the UNKNOWN_QUERY_TYPE message when the store cannot run the query.
	unknown string
}

func (s *queryStore) planV2(q v2Query) (*v2Plan, *apiError) {
	supported, known := v2Support[q.Type]
	if !known {
		names := make([]string, 0, len(v2Support))
		for n := range v2Support {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, badParam("query.type", "%q is not a query type (known: %s)", q.Type, strings.Join(names, ", "))
	}
	plan := &v2Plan{q: q}
	if !supported(s.spec) {
		plan.unknown = s.unknownQuery(q.Type, "")
		return plan, nil
	}
	var err error
	parseKey := func(field string, raw json.RawMessage, required bool) ([]byte, *apiError) {
		if len(raw) == 0 || string(raw) == "null" {
			if required {
				return nil, badParam("query."+field, "%s needs a %s", q.Type, field)
			}
			return nil, nil
		}
		var b []byte
		if b, err = s.key.parseJSON(raw); err != nil {
			return nil, badParam("query."+field, "%v", err)
		}
		return b, nil
	}
	var e *apiError
	switch q.Type {
	case "RangeQuery", "TimestampedRangeQuery", "TimestampedRangeWithHeadersQuery":
		if plan.lower, e = parseKey("lower", q.Lower, false); e != nil {
			return nil, e
		}
		if plan.upper, e = parseKey("upper", q.Upper, false); e != nil {
			return nil, e
		}
	case "WindowKeyQuery", "TimestampedWindowKeyWithHeadersQuery":
		if plan.key, e = parseKey("key", q.Key, true); e != nil {
			return nil, e
		}
		if q.TimeFrom == nil || q.TimeTo == nil {
			return nil, badParam("query.timeFrom", "%s needs timeFrom and timeTo (withKeyAndWindowStartRange)", q.Type)
		}
	case "WindowRangeQuery", "TimestampedWindowRangeWithHeadersQuery":
		hasKey := len(q.Key) > 0 && string(q.Key) != "null"
		hasRange := q.TimeFrom != nil && q.TimeTo != nil
		if hasKey == hasRange || (!hasRange && (q.TimeFrom != nil || q.TimeTo != nil)) {
			return nil, badParam("query", "%s takes either a key (withKey) or timeFrom and timeTo (withWindowStartRange)", q.Type)
		}
		switch {
		case isWindow(s.spec) && hasKey:
			plan.unknown = s.unknownQuery(q.Type, "WindowStores only supports WindowRangeQuery.withWindowStartRange.")
		case s.spec.Type == pipeline.SessionStoreType && hasRange:
			plan.unknown = s.unknownQuery(q.Type, "SessionStores only support WindowRangeQuery.withKey.")
		case hasKey:
			if plan.key, e = parseKey("key", q.Key, true); e != nil {
				return nil, e
			}
		}
	case "MultiVersionedKeyQuery":
		if plan.key, e = parseKey("key", q.Key, true); e != nil {
			return nil, e
		}
		// MeteredVersionedKeyValueStore's check, an IllegalArgumentException in Java.
		if timeOr(q.FromTime, math.MinInt64) > timeOr(q.ToTime, math.MaxInt64) {
			return nil, badParam("query.fromTime", "The `fromTime` timestamp must be smaller than the `toTime` timestamp.")
		}
	default: // KeyQuery, TimestampedKeyQuery, TimestampedKeyWithHeadersQuery, VersionedKeyQuery
		if plan.key, e = parseKey("key", q.Key, true); e != nil {
			return nil, e
		}
	}
	return plan, nil
}

// unknownQuery is QueryResult.forUnknownQueryType's message, with the reason StoreQueryUtils
// adds for window range queries.
func (s *queryStore) unknownQuery(queryType, because string) string {
	if because != "" {
		because = " because " + because
	}
	headers := ""
	if s.spec.Headers {
		headers = "headers-aware "
	}
	return fmt.Sprintf("This store (%s%s store %s) doesn't know how to execute the given query (%s)%s. Contact the store maintainer if you need support for a new query type.",
		headers, s.typeName, s.name, queryType, strings.TrimSuffix(because, "."))
}

func (a *Agent) queryV2(w http.ResponseWriter, r *http.Request) *apiError {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	var req v2Request
	if err := dec.Decode(&req); err != nil {
		return badParam("body", "not a query request: %v", err)
	}
	if req.Store == "" {
		return badParam("store", "the request names no store")
	}
	s, e := a.lookupStore(req.Store)
	if e != nil {
		return e
	}
	level, e := a.isolation(req.Isolation)
	if e != nil {
		return e
	}
	plan, e := s.planV2(req.Query)
	if e != nil {
		return e
	}
	bound, e := parseBound(req.PositionBound)
	if e != nil {
		return e
	}
	parts := req.Partitions
	if parts == nil {
		for p := int32(0); p < s.partitions; p++ {
			parts = append(parts, p)
		}
	}
	slices.Sort(parts)
	parts = slices.Compact(parts)

	out := newV2Writer(w, s.name)
	merged := map[string]map[string]int64{}
	running := a.state.Current() == StateRunning
	pace := pacerOf(r.Context())
	for _, p := range parts {
		switch {
		case r.Context().Err() != nil:
			out.failure(p, failStoreException, queryStopped(r.Context()).msg)
			continue
		case p < 0 || p >= s.partitions:
			out.failure(p, failNotPresent, "The requested partition was not present at the time of the query.")
			continue
		case req.RequireActive && !running:
			out.failure(p, failNotActive, fmt.Sprintf("Query requires a running active task, but partition %d was in state %s and was active.", p, a.state.Current()))
			continue
		}
		pos, err := s.position(p)
		if err != nil {
			out.failure(p, failStoreException, err.Error())
			continue
		}
		if !permitted(pos, bound, p) {
			out.failure(p, failNotUpToBound, fmt.Sprintf("For store partition %d, the current position %s is not yet up to the bound PositionBound{position=%s}",
				p, formatPosition(pos), formatPosition(bound)))
			continue
		}
		if plan.unknown != "" {
			out.failure(p, failUnknownQueryType, plan.unknown)
			continue
		}
		res, err := s.runV2(plan, p, level, pace)
		if err != nil {
			out.failure(p, failStoreException, err.Error())
			continue
		}
		out.success(p, pos, res)
		for t, m := range pos {
			if merged[t] == nil {
				merged[t] = map[string]int64{}
			}
			for k, v := range m {
				merged[t][k] = v
			}
		}
	}
	out.end(merged)
	return nil
}

// parseBound reads a position bound {"<topic>": {"<partition>": offset}}.
func parseBound(b map[string]map[string]int64) (map[string]map[string]int64, *apiError) {
	for t, m := range b {
		for k := range m {
			if n, err := strconv.Atoi(k); err != nil || n < 0 || strconv.Itoa(n) != k {
				return nil, badParam("positionBound", "topic %s: partition %q is not a partition number", t, k)
			}
		}
	}
	return b, nil
}

// permitted is StoreQueryUtils.isPermitted: every bound on this partition must be reached.
func permitted(pos, bound map[string]map[string]int64, p int32) bool {
	key := strconv.Itoa(int(p))
	for t, m := range bound {
		want, ok := m[key]
		if !ok {
			continue
		}
		seen, ok := pos[t][key]
		if !ok || seen < want {
			return false
		}
	}
	return true
}

// formatPosition prints a position as Kafka's Position.toString does.
func formatPosition(pos map[string]map[string]int64) string {
	topics := make([]string, 0, len(pos))
	for t := range pos {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	var b strings.Builder
	b.WriteString("Position{position={")
	for i, t := range topics {
		if i > 0 {
			b.WriteString(", ")
		}
		parts := make([]int, 0, len(pos[t]))
		for k := range pos[t] {
			n, _ := strconv.Atoi(k)
			parts = append(parts, n)
		}
		slices.Sort(parts)
		fmt.Fprintf(&b, "%s={", t)
		for j, n := range parts {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%d=%d", n, pos[t][strconv.Itoa(n)])
		}
		b.WriteString("}")
	}
	b.WriteString("}}")
	return b.String()
}

// v2Result is one partition's successful answer: a value, or items streamed from a source.
type v2Result struct {
	value any
	items *itemSource
}

// itemSource yields the items of a range result one at a time.
type itemSource struct {
	next  func() (any, bool, error)
	close func()
}

// runV2 runs a query on partition p. Reads of many entries step pace, which ends them at
// the query's deadline and lets the processing loop run between chunks.
func (s *queryStore) runV2(plan *v2Plan, p int32, level state.IsolationLevel, pace *pacer) (v2Result, error) {
	q := plan.q
	switch q.Type {
	case "KeyQuery", "TimestampedKeyQuery", "TimestampedKeyWithHeadersQuery", "VersionedKeyQuery":
		return s.runKeyQuery(plan, p, level)
	case "MultiVersionedKeyQuery":
		return s.runVersions(plan, p, level, pace)
	case "RangeQuery", "TimestampedRangeQuery", "TimestampedRangeWithHeadersQuery":
		if isVersioned(s.spec) {
			return s.runVersionedRange(plan, p, level, pace)
		}
		m, err := mergeRange(pace, []int32{p}, plan.lower, plan.upper, q.Descending, s.rangeOpener(level, q.Descending))
		if err != nil {
			return v2Result{}, err
		}
		return walkItems(m, func(it *state.KeyValueIterator) (any, error) {
			k, err := s.key.jsonValue(it.Key())
			if err != nil {
				return nil, err
			}
			v, err := s.value.jsonValue(it.Value())
			if err != nil {
				return nil, err
			}
			item := map[string]any{"key": k, "value": v}
			if q.Type != "RangeQuery" {
				item["timestamp"] = it.Timestamp()
			}
			if q.Type == "TimestampedRangeWithHeadersQuery" {
				h, err := it.Headers()
				if err != nil {
					return nil, err
				}
				item["headers"] = headersJSON(h)
			}
			return item, nil
		}), nil
	}
	// Window and session queries.
	st := s.spec
	var it windowCursor
	withKey := plan.key != nil
	switch {
	case st.Type == pipeline.SessionStoreType:
		ss, err := s.db.SessionStore(st, p)
		if err != nil {
			return v2Result{}, err
		}
		it = ss.View(level).Fetch(plan.key, false)
	default:
		ws, err := s.db.WindowStore(st, p)
		if err != nil {
			return v2Result{}, err
		}
		from, to := timeOr(q.TimeFrom, math.MinInt64), timeOr(q.TimeTo, math.MaxInt64)
		if withKey {
			it = ws.View(level).Fetch(plan.key, from, to, false)
		} else {
			it = ws.View(level).FetchAll(from, to, false)
		}
	}
	keyed := q.Type == "WindowKeyQuery" || q.Type == "TimestampedWindowKeyWithHeadersQuery"
	headers := strings.HasSuffix(q.Type, "WithHeadersQuery")
	return s.primed(&itemSource{close: it.Close, next: func() (any, bool, error) {
		if !it.Next() {
			return nil, false, it.Err()
		}
		if err := pace.step(); err != nil {
			return nil, false, err
		}
		v, err := s.value.jsonValue(it.Value())
		if err != nil {
			return nil, false, err
		}
		item := map[string]any{"windowStart": it.Start(), "windowEnd": it.End(), "value": v}
		if !keyed {
			if item["key"], err = s.key.jsonValue(it.Key()); err != nil {
				return nil, false, err
			}
		}
		if wi, ok := it.(*state.WindowIterator); ok && headers {
			h, err := wi.Headers()
			if err != nil {
				return nil, false, err
			}
			item["timestamp"], item["headers"] = wi.Timestamp(), headersJSON(h)
		}
		return item, true, nil
	}})
}

// primed reads a source's first item, so a read error becomes a clean STORE_EXCEPTION
// before anything of the partition's answer is written.
func (s *queryStore) primed(src *itemSource) (v2Result, error) {
	first, ok, err := src.next()
	if err != nil {
		src.close()
		return v2Result{}, err
	}
	done := !ok
	next := src.next
	src.next = func() (any, bool, error) {
		if done {
			return nil, false, nil
		}
		if first != nil {
			item := first
			first = nil
			return item, true, nil
		}
		return next()
	}
	return v2Result{items: src}, nil
}

// versionJSON is a VersionedRecord: validTo is null for the latest version.
func versionJSON(value any, rec pipeline.VersionedBytes) map[string]any {
	var validTo any
	if rec.ValidTo != pipeline.ValidToUndefined {
		validTo = rec.ValidTo
	}
	return map[string]any{"value": value, "timestamp": rec.Timestamp, "validTo": validTo}
}

// runVersions answers MultiVersionedKeyQuery: the key's versions valid at some time in
// [fromTime, toTime], ascending unless descending.
func (s *queryStore) runVersions(plan *v2Plan, p int32, level state.IsolationLevel, pace *pacer) (v2Result, error) {
	q := plan.q
	kp, err := s.kv(p, level)
	if err != nil {
		return v2Result{}, err
	}
	it := kp.versioned.Versions(plan.key, timeOr(q.FromTime, math.MinInt64), timeOr(q.ToTime, math.MaxInt64), q.Descending)
	return s.primed(&itemSource{close: it.Close, next: func() (any, bool, error) {
		if !it.Next() {
			return nil, false, it.Err()
		}
		if err := pace.step(); err != nil {
			return nil, false, err
		}
		rec := it.Record()
		v, err := s.value.jsonValue(rec.Value)
		if err != nil {
			return nil, false, err
		}
		return versionJSON(v, rec), true, nil
	}})
}

// runVersionedRange answers RangeQuery on a versioned store with each key's latest value,
// as Kafka's versioned stores do.
func (s *queryStore) runVersionedRange(plan *v2Plan, p int32, level state.IsolationLevel, pace *pacer) (v2Result, error) {
	reverse := plan.q.Descending
	m, err := mergeRange(pace, []int32{p}, plan.lower, plan.upper, reverse, func(p int32, lo, hi []byte) (*state.VersionedRangeIterator, error) {
		kp, err := s.kv(p, level)
		if err != nil {
			return nil, err
		}
		return kp.versioned.Range(lo, hi, reverse), nil
	})
	if err != nil {
		return v2Result{}, err
	}
	return walkItems(m, func(it *state.VersionedRangeIterator) (any, error) {
		k, err := s.key.jsonValue(it.Key())
		if err != nil {
			return nil, err
		}
		v, err := s.value.jsonValue(it.Record().Value)
		if err != nil {
			return nil, err
		}
		return map[string]any{"key": k, "value": v}, nil
	}), nil
}

// walkItems is the range result of a walk over one partition: item turns each entry into
// its JSON value, which may hold the entry's bytes, so the walk moves on only when the next
// item is asked for, after this one was written.
func walkItems[C kvCursor](m *kvMerge[C], item func(it C) (any, error)) v2Result {
	started := false
	return v2Result{items: &itemSource{close: m.close, next: func() (any, bool, error) {
		if started {
			m.advance(0)
		}
		started = true
		if m.head() < 0 {
			return nil, false, m.err
		}
		v, err := item(m.its[0])
		return v, err == nil, err
	}}}
}

func (s *queryStore) runKeyQuery(plan *v2Plan, p int32, level state.IsolationLevel) (v2Result, error) {
	q := plan.q
	kp, err := s.kv(p, level)
	if err != nil {
		return v2Result{}, err
	}
	if q.Type == "VersionedKeyQuery" {
		var rec pipeline.VersionedBytes
		var ok bool
		if q.AsOf == nil {
			rec, ok, err = kp.versioned.Get(plan.key)
		} else {
			rec, ok, err = kp.versioned.GetAsOf(plan.key, int64(*q.AsOf))
		}
		if err != nil || !ok {
			return v2Result{}, err
		}
		v, err := s.value.jsonValue(rec.Value)
		if err != nil {
			return v2Result{}, err
		}
		return v2Result{value: versionJSON(v, rec)}, nil
	}
	e, ok, err := kp.get(plan.key)
	if err != nil || !ok {
		return v2Result{}, err
	}
	v, err := s.value.jsonValue(e.value)
	if err != nil {
		return v2Result{}, err
	}
	switch q.Type {
	case "TimestampedKeyQuery":
		return v2Result{value: map[string]any{"value": v, "timestamp": e.ts}}, nil
	case "TimestampedKeyWithHeadersQuery":
		return v2Result{value: map[string]any{"value": v, "timestamp": e.ts, "headers": headersJSON(e.headers)}}, nil
	}
	return v2Result{value: v}, nil
}

// v2Writer streams the answer {"store", "partitionResults": [...], "position"}. A
// partition's "result" is written before its "success", so a read that fails half-way
// through a range can still be reported as STORE_EXCEPTION after the items it produced.
type v2Writer struct {
	bw  *bufio.Writer
	buf bytes.Buffer
	enc *json.Encoder
	n   int
}

func newV2Writer(w http.ResponseWriter, store string) *v2Writer {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	out := &v2Writer{bw: bufio.NewWriter(w)}
	out.enc = json.NewEncoder(&out.buf)
	out.enc.SetEscapeHTML(false)
	name, _ := json.Marshal(store)
	fmt.Fprintf(out.bw, `{"store":%s,"partitionResults":[`, name)
	return out
}

// encode returns v's JSON text; it is valid until the next call.
func (w *v2Writer) encode(v any) ([]byte, error) {
	w.buf.Reset()
	if err := w.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(w.buf.Bytes(), "\n"), nil
}

func (w *v2Writer) open() {
	if w.n > 0 {
		_ = w.bw.WriteByte(',')
	}
	w.n++
	_ = w.bw.WriteByte('\n')
}

func (w *v2Writer) failure(p int32, reason, msg string) {
	w.open()
	b, _ := w.encode(map[string]any{"partition": p, "success": false, "failureReason": reason, "failureMessage": msg})
	_, _ = w.bw.Write(b)
}

func (w *v2Writer) success(p int32, pos map[string]map[string]int64, res v2Result) {
	if res.items == nil {
		val, err := w.encode(res.value)
		if err != nil {
			w.failure(p, failStoreException, err.Error())
			return
		}
		w.open()
		posJSON, _ := json.Marshal(pos)
		fmt.Fprintf(w.bw, `{"partition":%d,"position":%s,"result":%s,"success":true}`, p, posJSON, val)
		return
	}
	defer res.items.close()
	w.open()
	posJSON, _ := json.Marshal(pos)
	fmt.Fprintf(w.bw, `{"partition":%d,"position":%s,"result":[`, p, posJSON)
	for i := 0; ; i++ {
		item, ok, err := res.items.next()
		var b []byte
		if err == nil && ok {
			b, err = w.encode(item)
		}
		if err != nil {
			msg, _ := json.Marshal(err.Error())
			fmt.Fprintf(w.bw, `],"success":false,"failureReason":%q,"failureMessage":%s}`, failStoreException, msg)
			return
		}
		if !ok {
			break
		}
		if i > 0 {
			_ = w.bw.WriteByte(',')
		}
		_, _ = w.bw.Write(b)
	}
	_, _ = w.bw.WriteString(`],"success":true}`)
}

func (w *v2Writer) end(position map[string]map[string]int64) {
	posJSON, _ := json.Marshal(position)
	fmt.Fprintf(w.bw, "\n],\"position\":%s}\n", posJSON)
	_ = w.bw.Flush()
}
