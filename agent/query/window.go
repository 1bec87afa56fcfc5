package query

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// windowCursor is what window and session iterators share.
type windowCursor interface {
	Next() bool
	Key() []byte
	Start() int64
	End() int64
	Value() []byte
	Err() error
	Close()
}

// fetchKey iterates key's windows whose start is in [from, to] (window stores, Kafka
// Streams' fetch(key, from, to)) or key's sessions that end at or after from and start at
// or before to (session stores, findSessions(key, earliestSessionEnd, latestSessionStart)).
func (s *queryStore) fetchKey(p int32, level state.IsolationLevel, key []byte, from, to int64, backward bool) (windowCursor, error) {
	switch {
	case isWindow(s.spec):
		st, err := s.db.WindowStore(s.spec, p)
		if err != nil {
			return nil, err
		}
		return st.View(level).Fetch(key, from, to, backward), nil
	case s.spec.Type == pipeline.SessionStoreType:
		st, err := s.db.SessionStore(s.spec, p)
		if err != nil {
			return nil, err
		}
		return st.View(level).FindSessions(key, from, to, backward), nil
	}
	return nil, fmt.Errorf("store %s is a %s store, not a window or session store", s.name, s.typeName)
}

// allWindows iterates every window (or session) of partition p.
func (s *queryStore) allWindows(p int32, level state.IsolationLevel) (windowCursor, error) {
	switch {
	case isWindow(s.spec):
		st, err := s.db.WindowStore(s.spec, p)
		if err != nil {
			return nil, err
		}
		return st.View(level).All(false), nil
	case s.spec.Type == pipeline.SessionStoreType:
		st, err := s.db.SessionStore(s.spec, p)
		if err != nil {
			return nil, err
		}
		return st.View(level).FetchRange(nil, nil, false), nil
	}
	return nil, fmt.Errorf("store %s is a %s store, not a window or session store", s.name, s.typeName)
}

func (s *queryStore) windowItem(it windowCursor) (WindowItem, error) {
	k, err := s.key.jsonValue(it.Key())
	if err != nil {
		return WindowItem{}, fmt.Errorf("store %s: key: %w", s.name, err)
	}
	v, err := s.value.jsonValue(it.Value())
	if err != nil {
		return WindowItem{}, fmt.Errorf("store %s: value of key %x: %w", s.name, it.Key(), err)
	}
	return WindowItem{Key: k, WindowStart: it.Start(), WindowEnd: it.End(), Value: v}, nil
}

// timeParam reads a time given as epoch milliseconds or as an RFC 3339 time.
func timeParam(q url.Values, name string, def int64) (int64, *apiError) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UnixMilli(), nil
	}
	return 0, badParam(name, "%q is neither epoch milliseconds nor an RFC 3339 time", v)
}

func (sv *server) fetchWindows(w http.ResponseWriter, r *http.Request) *apiError {
	s, level, e := sv.storeAt(r)
	if e != nil {
		return e
	}
	q := r.URL.Query()
	if !isWindow(s.spec) && s.spec.Type != pipeline.SessionStoreType {
		return &apiError{http.StatusBadRequest, "wrong_store_type", fmt.Sprintf(
			"store %s is a %s store: /windows reads window and session stores; read it with /v1/stores/%s/keys/{key}", s.name, s.typeName, s.name)}
	}
	key, err := s.key.parse(r.PathValue("key"), nil)
	if err != nil {
		return badParam("key", "%v", err)
	}
	from, e := timeParam(q, "from", math.MinInt64)
	if e != nil {
		return e
	}
	to, e := timeParam(q, "to", math.MaxInt64)
	if e != nil {
		return e
	}
	backward := false
	if v := q.Get("reverse"); v != "" {
		if backward, err = strconv.ParseBool(v); err != nil {
			return badParam("reverse", "%q is not true or false", v)
		}
	}
	order, e := s.keyOrder(w, r, key)
	if e != nil {
		return e
	}
	for _, p := range order {
		if e := s.replicas.check(p); e != nil {
			return e
		}
		it, err := s.fetchKey(p, level, key, from, to, backward)
		if err != nil {
			return storeError(err)
		}
		// Read errors surface at the first Next: read it before the status line.
		if !it.Next() {
			err := it.Err()
			it.Close()
			if err != nil {
				return storeError(err)
			}
			continue
		}
		out := startItems(w)
		err = s.streamWindows(out, it, pacerOf(r.Context()))
		it.Close()
		end := PageEnd{Lags: s.replicas.lags}
		if err != nil {
			e := asAPIError(err)
			end.Error, end.Code = e.msg, e.code
		}
		// A key's windows live in one partition: the first that has any holds them all.
		_ = out.end(end)
		return nil
	}
	_ = startItems(w).end(PageEnd{Lags: s.replicas.lags})
	return nil
}

// streamWindows writes it's current entry and the rest.
func (s *queryStore) streamWindows(out *itemStream, it windowCursor, pace *pacer) error {
	for {
		item, err := s.windowItem(it)
		if err != nil {
			return err
		}
		if err := out.add(item); err != nil {
			return err
		}
		if !it.Next() {
			return it.Err()
		}
		if err := pace.step(); err != nil {
			return err
		}
	}
}
