package query

import (
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// queryKind is one IQv2 query type: the stores that answer it, how its fields are read,
// and how it runs on one partition.
type queryKind struct {
	// supports is Kafka Streams' support matrix (KSS/StoreQueryUtils.java, Metered*.java)
	// plus KIP-1356's headers-aware queries, which only headers-aware stores answer.
	supports func(s pipeline.StoreSpec) bool
	// parse reads the fields the type's Java builder takes into plan.
	parse func(s *queryStore, plan *v2Plan) *apiError
	// run answers the query on partition p. Reads of many entries step pace, which ends
	// them at the query's deadline and lets the processing loop run between chunks.
	run func(s *queryStore, plan *v2Plan, p int32, level state.IsolationLevel, pace *pacer) (v2Result, error)
}

// queryKinds are the query types, by the name of their Java class.
var queryKinds = map[string]queryKind{
	"KeyQuery":                               {isKV, parseKey, runKey(false, false)},
	"TimestampedKeyQuery":                    {isTimestampedKV, parseKey, runKey(true, false)},
	"TimestampedKeyWithHeadersQuery":         {withHeaders(isTimestampedKV), parseKey, runKey(true, true)},
	"VersionedKeyQuery":                      {isVersioned, parseKey, runVersionedKey},
	"MultiVersionedKeyQuery":                 {isVersioned, parseVersions, runVersions},
	"RangeQuery":                             {isKV, parseRange, runRange(false, false)},
	"TimestampedRangeQuery":                  {isTimestampedKV, parseRange, runRange(true, false)},
	"TimestampedRangeWithHeadersQuery":       {withHeaders(isTimestampedKV), parseRange, runRange(true, true)},
	"WindowKeyQuery":                         {isWindow, parseWindowKey, runWindows(true, false)},
	"WindowRangeQuery":                       {isWindowOrSession, parseWindowRange, runWindows(false, false)},
	"TimestampedWindowKeyWithHeadersQuery":   {withHeaders(isWindow), parseWindowKey, runWindows(true, true)},
	"TimestampedWindowRangeWithHeadersQuery": {withHeaders(isWindow), parseWindowRange, runWindows(false, true)},
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
func isWindowOrSession(s pipeline.StoreSpec) bool {
	return isWindow(s) || s.Type == pipeline.SessionStoreType
}
func isVersioned(s pipeline.StoreSpec) bool { return s.Type == pipeline.VersionedKeyValueStoreType }

func withHeaders(supports func(pipeline.StoreSpec) bool) func(pipeline.StoreSpec) bool {
	return func(s pipeline.StoreSpec) bool { return supports(s) && s.Headers }
}

// v2Plan is a checked query, its keys serialised.
type v2Plan struct {
	q            v2Query
	kind         queryKind
	key          []byte
	lower, upper []byte
	// unknown is the UNKNOWN_QUERY_TYPE message when the store cannot run the query.
	unknown string
}

// plan checks q against its kind and the store.
func (s *queryStore) plan(q v2Query) (*v2Plan, *apiError) {
	kind, known := queryKinds[q.Type]
	if !known {
		names := make([]string, 0, len(queryKinds))
		for n := range queryKinds {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, badParam("query.type", "%q is not a query type (known: %s)", q.Type, strings.Join(names, ", "))
	}
	plan := &v2Plan{q: q, kind: kind}
	if !kind.supports(s.spec) {
		plan.unknown = s.unknownQuery(q.Type, "")
		return plan, nil
	}
	if e := kind.parse(s, plan); e != nil {
		return nil, e
	}
	return plan, nil
}

// keyField serialises the key in one of a query's fields.
func (s *queryStore) keyField(q v2Query, field string, raw json.RawMessage, required bool) ([]byte, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		if required {
			return nil, badParam("query."+field, "%s needs a %s", q.Type, field)
		}
		return nil, nil
	}
	b, err := s.key.parseJSON(raw)
	if err != nil {
		return nil, badParam("query."+field, "%v", err)
	}
	return b, nil
}

func parseKey(s *queryStore, plan *v2Plan) (e *apiError) {
	plan.key, e = s.keyField(plan.q, "key", plan.q.Key, true)
	return e
}

func parseRange(s *queryStore, plan *v2Plan) (e *apiError) {
	if plan.lower, e = s.keyField(plan.q, "lower", plan.q.Lower, false); e != nil {
		return e
	}
	plan.upper, e = s.keyField(plan.q, "upper", plan.q.Upper, false)
	return e
}

func parseVersions(s *queryStore, plan *v2Plan) *apiError {
	if e := parseKey(s, plan); e != nil {
		return e
	}
	// MeteredVersionedKeyValueStore's check, an IllegalArgumentException in Java.
	if timeOr(plan.q.FromTime, math.MinInt64) > timeOr(plan.q.ToTime, math.MaxInt64) {
		return badParam("query.fromTime", "The `fromTime` timestamp must be smaller than the `toTime` timestamp.")
	}
	return nil
}

func parseWindowKey(s *queryStore, plan *v2Plan) *apiError {
	if e := parseKey(s, plan); e != nil {
		return e
	}
	if plan.q.TimeFrom == nil || plan.q.TimeTo == nil {
		return badParam("query.timeFrom", "%s needs timeFrom and timeTo (withKeyAndWindowStartRange)", plan.q.Type)
	}
	return nil
}

// parseWindowRange reads a window range query, withKey (session stores) or
// withWindowStartRange (window stores); the other form is an unknown query to the store.
func parseWindowRange(s *queryStore, plan *v2Plan) *apiError {
	q := plan.q
	hasKey := len(q.Key) > 0 && string(q.Key) != "null"
	hasRange := q.TimeFrom != nil && q.TimeTo != nil
	if hasKey == hasRange || (!hasRange && (q.TimeFrom != nil || q.TimeTo != nil)) {
		return badParam("query", "%s takes either a key (withKey) or timeFrom and timeTo (withWindowStartRange)", q.Type)
	}
	switch {
	case isWindow(s.spec) && hasKey:
		plan.unknown = s.unknownQuery(q.Type, "WindowStores only supports WindowRangeQuery.withWindowStartRange.")
	case s.spec.Type == pipeline.SessionStoreType && hasRange:
		plan.unknown = s.unknownQuery(q.Type, "SessionStores only support WindowRangeQuery.withKey.")
	case hasKey:
		return parseKey(s, plan)
	}
	return nil
}

// runKey answers a key query with the value, with its timestamp and its headers if asked.
func runKey(timestamp, headers bool) func(*queryStore, *v2Plan, int32, state.IsolationLevel, *pacer) (v2Result, error) {
	return func(s *queryStore, plan *v2Plan, p int32, level state.IsolationLevel, _ *pacer) (v2Result, error) {
		kp, err := s.kv(p, level)
		if err != nil {
			return v2Result{}, err
		}
		e, ok, err := kp.get(plan.key)
		if err != nil || !ok {
			return v2Result{}, err
		}
		v, err := s.value.jsonValue(e.value)
		if err != nil {
			return v2Result{}, err
		}
		if !timestamp {
			return v2Result{value: v}, nil
		}
		answer := map[string]any{"value": v, "timestamp": e.ts}
		if headers {
			answer["headers"] = headersJSON(e.headers)
		}
		return v2Result{value: answer}, nil
	}
}

// runVersionedKey answers VersionedKeyQuery: the latest version, or the one valid at asOf.
func runVersionedKey(s *queryStore, plan *v2Plan, p int32, level state.IsolationLevel, _ *pacer) (v2Result, error) {
	kp, err := s.kv(p, level)
	if err != nil {
		return v2Result{}, err
	}
	var rec pipeline.VersionedBytes
	var ok bool
	if plan.q.AsOf == nil {
		rec, ok, err = kp.versioned.Get(plan.key)
	} else {
		rec, ok, err = kp.versioned.GetAsOf(plan.key, int64(*plan.q.AsOf))
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
func runVersions(s *queryStore, plan *v2Plan, p int32, level state.IsolationLevel, pace *pacer) (v2Result, error) {
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

// runRange answers a range query with keys and values, with their timestamps and headers
// if asked.
func runRange(timestamp, headers bool) func(*queryStore, *v2Plan, int32, state.IsolationLevel, *pacer) (v2Result, error) {
	return func(s *queryStore, plan *v2Plan, p int32, level state.IsolationLevel, pace *pacer) (v2Result, error) {
		if isVersioned(s.spec) {
			return s.runVersionedRange(plan, p, level, pace)
		}
		m, err := mergeRange(pace, []int32{p}, plan.lower, plan.upper, plan.q.Descending, s.rangeOpener(level, plan.q.Descending))
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
			if timestamp {
				item["timestamp"] = it.Timestamp()
			}
			if headers {
				h, err := it.Headers()
				if err != nil {
					return nil, err
				}
				item["headers"] = headersJSON(h)
			}
			return item, nil
		}), nil
	}
}

// runVersionedRange answers RangeQuery on a versioned store with each key's latest value,
// as Kafka's versioned stores do.
func (s *queryStore) runVersionedRange(plan *v2Plan, p int32, level state.IsolationLevel, pace *pacer) (v2Result, error) {
	reverse := plan.q.Descending
	m, err := mergeRange(pace, []int32{p}, plan.lower, plan.upper, reverse, s.versionedOpener(level, reverse))
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

// runWindows answers a window or session query: keyed queries leave the key out of the
// items, headers-aware ones add each window's timestamp and headers.
func runWindows(keyed, headers bool) func(*queryStore, *v2Plan, int32, state.IsolationLevel, *pacer) (v2Result, error) {
	return func(s *queryStore, plan *v2Plan, p int32, level state.IsolationLevel, pace *pacer) (v2Result, error) {
		q, st := plan.q, s.spec
		var it windowCursor
		if st.Type == pipeline.SessionStoreType {
			ss, err := s.db.SessionStore(st, p)
			if err != nil {
				return v2Result{}, err
			}
			it = ss.View(level).Fetch(plan.key, false)
		} else {
			ws, err := s.db.WindowStore(st, p)
			if err != nil {
				return v2Result{}, err
			}
			from, to := timeOr(q.TimeFrom, math.MinInt64), timeOr(q.TimeTo, math.MaxInt64)
			if plan.key != nil {
				it = ws.View(level).Fetch(plan.key, from, to, false)
			} else {
				it = ws.View(level).FetchAll(from, to, false)
			}
		}
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
}
