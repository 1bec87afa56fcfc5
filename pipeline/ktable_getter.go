package pipeline

import "fmt"

// tableGetter reads a table's current row of a key, as Kafka Streams' KTableValueGetter
// does: from the table's store when it has one, else computed from the rows of the tables
// it derives from (a filter or mapValues applied to its parent's row, a join computed from
// both inputs' rows). stores are the stores it reads, which a processor using it lists.
type tableGetter struct {
	stores []string
	// get returns the row of key in the partition of rec (whose context a callback sees),
	// and its timestamp; found is false for an absent or deleted row.
	get getRow
	// at returns the row of key as of a time, for a versioned table (nil otherwise), whose
	// history reaches back historyRetention ms.
	at               func(ctx *Context, rec Record, key any, asOf int64) (value any, ts int64, found bool, err error)
	historyRetention int64
}

type getRow func(ctx *Context, rec Record, key any) (value any, ts int64, found bool, err error)

// getter returns how to read the table's rows: materializing a lazily materialized table
// (a source table, toTable) as Kafka Streams' valueGetterSupplier does.
func (t *KTable) getter() (*tableGetter, error) {
	if t.store == "" && t.materialize != nil && t.derivedGetter == nil {
		t.materialize()
	}
	if t.store != "" {
		spec := t.b.stores[t.store]
		switch {
		case spec != nil && spec.Type == VersionedKeyValueStoreType:
			return versionedGetter(spec), nil
		case spec != nil && spec.Type != TimestampedKeyValueStoreType && spec.Type != KeyValueStoreType:
			return nil, fmt.Errorf("not supported yet: reading table rows from store %q, a %s store", t.store, spec.Type)
		}
		return storeGetter(t.store), nil
	}
	if t.derivedGetter == nil {
		return nil, fmt.Errorf("not supported yet: reading the rows of table %s (materialize the table it comes from)", t.node.Name)
	}
	return t.derivedGetter()
}

func storeGetter(name string) *tableGetter {
	return &tableGetter{stores: []string{name}, get: func(ctx *Context, rec Record, key any) (any, int64, bool, error) {
		s, err := ctx.store(name, rec.Partition)
		if err != nil {
			return nil, 0, false, err
		}
		v, ts, found, err := s.Get(key)
		return v, ts, found && v != nil, err
	}}
}

// versionedGetter reads a versioned store: its latest versions, or the version valid at a
// time (KTableSourceValueGetter over a VersionedKeyValueStore).
func versionedGetter(spec *StoreSpec) *tableGetter {
	read := func(ctx *Context, rec Record, key any, latest bool, asOf int64) (any, int64, bool, error) {
		s, err := ctx.versionedStore(spec.Name, rec.Partition)
		if err != nil {
			return nil, 0, false, err
		}
		var v VersionedRecord
		var found bool
		if latest {
			v, found, err = s.Get(key)
		} else {
			v, found, err = s.GetAsOf(key, asOf)
		}
		return v.Value, v.Timestamp, found && v.Value != nil, err
	}
	return &tableGetter{stores: []string{spec.Name}, historyRetention: spec.HistoryRetention,
		get: func(ctx *Context, rec Record, key any) (any, int64, bool, error) { return read(ctx, rec, key, true, 0) },
		at: func(ctx *Context, rec Record, key any, asOf int64) (any, int64, bool, error) {
			return read(ctx, rec, key, false, asOf)
		}}
}

// mappedGetter is the getter of a table whose rows are its parent's passed through fn
// (KTableFilterValueGetter, KTableMapValuesValueGetter): fn gets the parent's row as
// rec.Value and returns the row, nil for none.
func mappedGetter(parent *KTable, fn func(rec Record) (any, error)) func() (*tableGetter, error) {
	return func() (*tableGetter, error) {
		pg, err := parent.getter()
		if err != nil {
			return nil, err
		}
		apply := func(rec Record, key, v any, ts int64, found bool, err error) (any, int64, bool, error) {
			if err != nil || !found {
				return nil, ts, false, err
			}
			r := rec
			r.Key, r.Value, r.Timestamp = key, v, ts
			out, err := fn(r)
			return out, ts, err == nil && out != nil, err
		}
		g := &tableGetter{stores: pg.stores, historyRetention: pg.historyRetention,
			get: func(ctx *Context, rec Record, key any) (any, int64, bool, error) {
				v, ts, found, err := pg.get(ctx, rec, key)
				return apply(rec, key, v, ts, found, err)
			}}
		if pg.at != nil {
			g.at = func(ctx *Context, rec Record, key any, asOf int64) (any, int64, bool, error) {
				v, ts, found, err := pg.at(ctx, rec, key, asOf)
				return apply(rec, key, v, ts, found, err)
			}
		}
		return g, nil
	}
}

// joinGetter is the getter of an unmaterialized table-table join: the join of both
// inputs' rows (KTableKTableInnerJoinValueGetter, -LeftJoinValueGetter,
// -OuterJoinValueGetter), at the later of their timestamps.
func joinGetter(this, other *KTable, joiner ValueJoinerWithKey, kind TableJoinKind) func() (*tableGetter, error) {
	return func() (*tableGetter, error) {
		tg, err := this.getter()
		if err != nil {
			return nil, err
		}
		og, err := other.getter()
		if err != nil {
			return nil, err
		}
		return &tableGetter{stores: append(append([]string(nil), tg.stores...), og.stores...),
			get: func(ctx *Context, rec Record, key any) (any, int64, bool, error) {
				v1, ts1, ok1, err := tg.get(ctx, rec, key)
				if err != nil || (!ok1 && kind != OuterTableJoin) {
					return nil, 0, false, err
				}
				v2, ts2, ok2, err := og.get(ctx, rec, key)
				if err != nil || (!ok2 && kind == InnerTableJoin) || (!ok1 && !ok2) {
					return nil, 0, false, err
				}
				ts := max(ts1, ts2)
				switch {
				case !ok1:
					ts = ts2
				case !ok2:
					ts = ts1
				}
				r := rec
				r.Key, r.Value, r.Timestamp = key, v1, ts
				out, err := joiner(r, v2)
				return out, ts, err == nil && out != nil, err
			}}, nil
	}
}
