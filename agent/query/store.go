package query

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stoatflow/stoatflow/luart/suggest"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// apiError is an HTTP error answer: {"error": msg, "code": code} with status.
type apiError struct {
	status    int
	code, msg string
}

func (e *apiError) Error() string { return e.msg }

func badParam(name, format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "bad_parameter", name + ": " + fmt.Sprintf(format, args...)}
}

// repeatedParam refuses a parameter given n > 1 times.
func repeatedParam(name string, n int) *apiError {
	return badParam(name, "given %d times; give it once", n)
}

func storeError(err error) *apiError {
	return &apiError{http.StatusInternalServerError, "store_error", err.Error()}
}

// unknownStore is Kafka Streams' UnknownStateStoreException, with the store meant when the
// name looks misspelled, and the stores there are.
func unknownStore(name string, stores []string) *apiError {
	msg := fmt.Sprintf("Cannot get state store %s because no such store is registered in the topology.", name)
	if best, ok := suggest.Closest(name, stores); ok {
		msg += fmt.Sprintf(" Did you mean %q?", best)
	}
	if len(stores) == 0 {
		msg += " The topology has no stores."
	} else {
		msg += " Its stores: " + strings.Join(stores, ", ") + "."
	}
	return &apiError{http.StatusNotFound, "unknown_store", msg}
}

// queryStore is one store as interactive queries see it.
type queryStore struct {
	name       string
	typeName   string // the DSL's name of the store type
	spec       pipeline.StoreSpec
	key, value fieldCodec
	partitions int32
	global     bool // a global table's store
	changelog  string
	db         *state.DB
	// replicas says which of its partitions the query may read.
	replicas *replicas
}

// lookupStore finds a store of the running application: 503 before the stores are
// restored, 404 for a name the topology does not declare.
func (sv *server) lookupStore(name string) (*queryStore, *apiError) {
	c := sv.agent.Stores()
	if c == nil {
		return nil, notReady(sv.agent.State())
	}
	if c.Partitions < 1 {
		return nil, storeError(fmt.Errorf("the store catalogue has %d partitions", c.Partitions))
	}
	var names []string
	for _, spec := range c.Specs {
		if spec.Name != name {
			names = append(names, spec.Name)
			continue
		}
		topic := pipeline.ChangelogTopic(sv.opts.ApplicationID, name)
		return &queryStore{
			name: name, typeName: spec.Type.String(), spec: spec,
			key: newFieldCodec(spec.Serdes.Key, topic), value: newFieldCodec(spec.Serdes.Value, topic),
			partitions: c.PartitionsOf(name), global: c.Global[name], changelog: topic, db: c.DB,
			replicas: &replicas{sv: sv, store: name, placed: sv.placement()},
		}, nil
	}
	slices.Sort(names)
	return nil, unknownStore(name, names)
}

// replicas decides, per store partition, whether this agent answers from it: when it
// holds the partition as the active, or a standby copy and the caller allows stale stores
// (StaleParam). It keeps the lags of the standby copies read, for the answer.
type replicas struct {
	sv    *server
	store string
	stale bool
	lags  Lags
	// placed is, in a streams group, which agent runs each partition.
	placed placed
}

// check allows reading partition p, or says why not.
func (rs *replicas) check(p int32) *apiError {
	h := rs.sv.agent.Holding(rs.store, p)
	switch {
	case h.Active:
		return nil
	case h.Standby && rs.stale:
		if rs.lags == nil {
			rs.lags = Lags{}
		}
		rs.lags[strconv.Itoa(int(p))] = h.Lag
		return nil
	}
	return rs.sv.notActive(rs.store, p, h, rs.stale)
}

// notActive is the refusal of a store partition this agent does not process: 503
// "standby", pointing at the active and, for a standby copy, at stale reads.
func (sv *server) notActive(store string, p int32, h Holding, stale bool) *apiError {
	var msg string
	if instance, host, standby := sv.agent.Standby(); standby {
		where := "it has no application.server"
		if host != "" {
			where = "it answers at " + host
		}
		msg = fmt.Sprintf("this agent is a standby of application %s; query the active agent %s (%s): GET /v1/metadata/{store}/{key} names it",
			sv.opts.ApplicationID, instance, where)
	} else {
		msg = fmt.Sprintf("this agent does not process partition %d of store %s; GET /v1/metadata/{store}/{key} names the agent that does", p, store)
	}
	switch {
	case h.Standby && !stale:
		msg += fmt.Sprintf(", or allow stale stores (%s=true) to read this agent's copy, %d offsets behind when it last read the changelog",
			StaleParam, h.Lag.OffsetLag)
	case !h.Standby && stale:
		msg += fmt.Sprintf("; it keeps no copy of partition %d of store %s to read stale: %s", p, store, h.Why)
	}
	return &apiError{http.StatusServiceUnavailable, "standby", msg}
}

func notReady(state string) *apiError {
	return &apiError{http.StatusServiceUnavailable, "not_ready",
		fmt.Sprintf("the state stores are not ready (application state %s); retry once the agent is RUNNING", state)}
}

// keyPartition is the store partition a key lives in when the store is fed by keyed input
// partitioned by Kafka's default partitioner (or re-keyed inside the topology).
func (s *queryStore) keyPartition(key []byte) int32 {
	return pipeline.DefaultPartition(key, s.partitions)
}

// searchOrder is the key's own partition first, then the others: a store fed by un-keyed
// or custom-partitioned input may hold the key anywhere.
func (s *queryStore) searchOrder(key []byte) []int32 {
	home := s.keyPartition(key)
	order := []int32{home}
	for p := int32(0); p < s.partitions; p++ {
		if p != home {
			order = append(order, p)
		}
	}
	return order
}

// kvPartition reads one partition of a key-value store (plain, timestamped or versioned).
type kvPartition struct {
	plain     *state.KeyValueView
	ts        *state.TimestampedKeyValueView
	versioned *state.VersionedView
}

// kvEntry is one value read by key.
type kvEntry struct {
	value   []byte
	ts      int64
	headers pipeline.Headers
}

func (s *queryStore) isKeyValue() bool {
	return isKV(s.spec)
}

func (s *queryStore) kv(p int32, level state.IsolationLevel) (kvPartition, error) {
	switch s.spec.Type {
	case pipeline.KeyValueStoreType:
		st, err := s.db.KeyValueStore(s.spec, p)
		if err != nil {
			return kvPartition{}, err
		}
		v := st.View(level)
		return kvPartition{plain: &v}, nil
	case pipeline.TimestampedKeyValueStoreType:
		st, err := s.db.TimestampedKeyValueStore(s.spec, p)
		if err != nil {
			return kvPartition{}, err
		}
		v := st.View(level)
		return kvPartition{ts: &v}, nil
	case pipeline.VersionedKeyValueStoreType:
		st, err := s.db.VersionedStore(s.spec, p)
		if err != nil {
			return kvPartition{}, err
		}
		v := st.View(level)
		return kvPartition{versioned: &v}, nil
	}
	return kvPartition{}, fmt.Errorf("store %s is a %s store, not a key-value store", s.name, s.typeName)
}

// get reads key; a versioned store answers its latest version.
func (k kvPartition) get(key []byte) (kvEntry, bool, error) {
	switch {
	case k.plain != nil:
		v, err := k.plain.Get(key)
		return kvEntry{value: v, ts: state.NoTimestamp}, v != nil, err
	case k.ts != nil:
		v, ts, h, err := k.ts.GetWithHeaders(key)
		return kvEntry{value: v, ts: ts, headers: h}, v != nil, err
	default:
		rec, ok, err := k.versioned.Get(key)
		return kvEntry{value: rec.Value, ts: rec.Timestamp}, ok, err
	}
}

// rng iterates [from, to] (nil = open) of a plain or timestamped store; versioned stores
// range through VersionedView.Range (queryStore.versionedOpener).
func (k kvPartition) rng(from, to []byte, reverse bool) (*state.KeyValueIterator, error) {
	switch {
	case k.plain != nil:
		return k.plain.Range(from, to, reverse), nil
	case k.ts != nil:
		return k.ts.Range(from, to, reverse), nil
	}
	return nil, errors.New("a versioned store ranges over its latest versions (queryStore.versionedOpener)")
}

// position is the changelog offset the store partition has applied, in Kafka Streams'
// Position shape: {"<changelog topic>": {"<partition>": offset}}; empty when none is.
func (s *queryStore) position(p int32) (map[string]map[string]int64, error) {
	pos := map[string]map[string]int64{}
	if s.db == nil || !s.spec.Logged {
		return pos, nil
	}
	off, ok, err := s.db.ChangelogOffset(s.name, p)
	if err != nil || !ok {
		return pos, err
	}
	pos[s.changelog] = map[string]int64{strconv.Itoa(int(p)): off}
	return pos, nil
}

// headersJSON shows record headers as a list, keeping order and repeats; a value that is
// not UTF-8 text is given as valueBase64 instead.
func headersJSON(hs pipeline.Headers) []map[string]any {
	out := make([]map[string]any, 0, len(hs))
	for _, h := range hs {
		m := map[string]any{"key": h.Key}
		switch {
		case h.Value == nil:
			m["value"] = nil
		case utf8.Valid(h.Value):
			m["value"] = string(h.Value)
		default:
			m["valueBase64"] = h.Value
		}
		out = append(out, m)
	}
	return out
}
