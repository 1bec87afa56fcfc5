package query

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

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
// (default: all), position bound, requireActive and, as KIP-892 adds, an isolation level;
// staleStores lets standby copies answer (StaleParam).
type v2Request struct {
	Store         string                      `json:"store"`
	Query         v2Query                     `json:"query"`
	Partitions    []int32                     `json:"partitions"`
	Isolation     string                      `json:"isolation"`
	PositionBound map[string]map[string]int64 `json:"positionBound"`
	RequireActive bool                        `json:"requireActive"`
	StaleStores   bool                        `json:"staleStores"`
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

// v2Isolation is the isolation level of an IQv2 query, given as ?isolation= as every
// query endpoint takes it, or as the body's "isolation" field: either, or both if they
// agree. A bad value gets the error ?isolation= gets elsewhere, wherever it is written.
func (sv *server) v2Isolation(param, body string) (state.IsolationLevel, *apiError) {
	if param != "" && body != "" && param != body {
		for _, v := range []string{param, body} {
			if _, e := sv.isolation(v); e != nil {
				return 0, e
			}
		}
		return 0, badParam("isolation", "the query string's isolation=%s and the body's \"isolation\": %q differ; give one, or both alike", param, body)
	}
	if param != "" {
		return sv.isolation(param)
	}
	return sv.isolation(body)
}

func (sv *server) queryV2(w http.ResponseWriter, r *http.Request) *apiError {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	var req v2Request
	if err := dec.Decode(&req); err != nil {
		return badParam("body", "not a query request: %v", err)
	}
	if req.Store == "" {
		return badParam("store", "the request names no store")
	}
	s, e := sv.lookupStore(req.Store)
	if e != nil {
		return e
	}
	level, e := sv.v2Isolation(r.URL.Query().Get("isolation"), req.Isolation)
	if e != nil {
		return e
	}
	plan, e := s.plan(req.Query)
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
	// Without staleStores, an agent that processes none of the partitions asked for refuses
	// the whole query, pointing at the active, as every store query does. In a streams group
	// it redirects the query to an agent running one of them (pd.route); an agent running
	// some answers those, and the others fail NOT_PRESENT naming the agent that runs them.
	pd := s.replicas.placed
	// In a streams group a standby copy answers a query that allows stale stores and does
	// not require the active.
	stale := req.StaleStores && !req.RequireActive
	holdings := map[int32]Holding{}
	var refusal *apiError
	var elsewhere []int32
	for _, p := range parts {
		if p < 0 || p >= s.partitions {
			continue
		}
		h := sv.agent.Holding(s.name, p)
		holdings[p] = h
		switch {
		case h.Active:
		case pd.spread && !(stale && h.Standby):
			elsewhere = append(elsewhere, p)
		case refusal == nil && !req.StaleStores:
			refusal = sv.notActive(s.name, p, h, false)
		}
	}
	if pd.spread && len(elsewhere) > 0 && len(elsewhere) == len(holdings) {
		refusal = pd.route(w, r, s.name, elsewhere)
	}
	for _, h := range holdings {
		if h.Active || (stale && h.Standby) {
			refusal = nil
		}
	}
	if refusal != nil {
		return refusal
	}

	out := newV2Writer(w, s.name)
	merged := map[string]map[string]int64{}
	appState := sv.agent.State()
	running := appState == stateRunning
	pace := pacerOf(r.Context())
	for _, p := range parts {
		switch {
		case r.Context().Err() != nil:
			out.failure(p, failStoreException, queryStopped(r.Context()).msg)
			continue
		case p < 0 || p >= s.partitions:
			out.failure(p, failNotPresent, "The requested partition was not present at the time of the query.")
			continue
		case pd.spread && !holdings[p].Active && !(stale && holdings[p].Standby):
			out.failure(p, failNotPresent, pd.notPresent(s.name, p))
			continue
		case req.RequireActive && !running:
			out.failure(p, failNotActive, fmt.Sprintf("Query requires a running active task, but partition %d was in state %s and was active.", p, appState))
			continue
		case !holdings[p].Active && (req.RequireActive || !req.StaleStores || !holdings[p].Standby):
			out.failure(p, failNotActive, sv.notActive(s.name, p, holdings[p], req.StaleStores).msg)
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
		res, err := plan.kind.run(s, plan, p, level, pace)
		if err != nil {
			out.failure(p, failStoreException, err.Error())
			continue
		}
		var lag *LagInfo
		if h := holdings[p]; !h.Active {
			lag = &h.Lag
		}
		out.success(p, pos, lag, res)
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

// success writes a partition's result; lag is its standby copy's, nil for the active's.
func (w *v2Writer) success(p int32, pos map[string]map[string]int64, lag *LagInfo, res v2Result) {
	head := ""
	if lag != nil {
		b, _ := json.Marshal(lag)
		head = `"lag":` + string(b) + ","
	}
	if res.items == nil {
		val, err := w.encode(res.value)
		if err != nil {
			w.failure(p, failStoreException, err.Error())
			return
		}
		w.open()
		posJSON, _ := json.Marshal(pos)
		fmt.Fprintf(w.bw, `{%s"partition":%d,"position":%s,"result":%s,"success":true}`, head, p, posJSON, val)
		return
	}
	defer res.items.close()
	w.open()
	posJSON, _ := json.Marshal(pos)
	fmt.Fprintf(w.bw, `{%s"partition":%d,"position":%s,"result":[`, head, p, posJSON)
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
