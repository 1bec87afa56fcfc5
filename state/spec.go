package state

import (
	"fmt"

	"github.com/stoatflow/stoatflow/pipeline"
)

// storeKind is how a store keeps its data. Plain and timestamped window stores share one
// kind: both keep each value's timestamp.
type storeKind int

const (
	keyValueKind storeKind = iota + 1
	timestampedKeyValueKind
	windowKind
	sessionKind
	versionedKind
)

// kindNames are the names catalogue entries store kinds by.
var kindNames = map[storeKind]string{
	keyValueKind:            "KeyValue",
	timestampedKeyValueKind: "TimestampedKeyValue",
	windowKind:              "Window",
	sessionKind:             "Session",
	versionedKind:           "Versioned",
}

// kindOf maps the engine's store types to the kinds that keep them.
var kindOf = map[pipeline.StoreType]storeKind{
	pipeline.KeyValueStoreType:            keyValueKind,
	pipeline.TimestampedKeyValueStoreType: timestampedKeyValueKind,
	pipeline.WindowStoreType:              windowKind,
	pipeline.TimestampedWindowStoreType:   windowKind,
	pipeline.SessionStoreType:             sessionKind,
	pipeline.VersionedKeyValueStoreType:   versionedKind,
}

func (k storeKind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return fmt.Sprintf("storeKind(%d)", int(k))
}

// MarshalText writes the kind's name, so the catalogue stays readable.
func (k storeKind) MarshalText() ([]byte, error) {
	if _, ok := kindNames[k]; !ok {
		return nil, fmt.Errorf("unknown store kind %d", int(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText reads a kind name written by MarshalText.
func (k *storeKind) UnmarshalText(b []byte) error {
	for v, n := range kindNames {
		if n == string(b) {
			*k = v
			return nil
		}
	}
	return fmt.Errorf("unknown store kind %q", b)
}

// catalogSpec is what the database keeps of a store's spec (pipeline.StoreSpec): the parts
// that decide how its data is laid out and kept. It is the store's catalogue entry, and
// every open partition of the store has it. Times are milliseconds.
type catalogSpec struct {
	Name             string
	Type             storeKind
	Headers          bool
	Logged           bool
	Retention        int64
	WindowSize       int64
	RetainDuplicates bool
	HistoryRetention int64
	// ChangelogVersion is StoreSpec.ChangelogVersion: not the stored layout, but kept so
	// that a spec read back is the one the store runs with.
	ChangelogVersion byte `json:",omitempty"`
}

// catalogSpecOf checks an engine spec with the engine's own rules and returns what the
// database keeps of it.
func catalogSpecOf(spec pipeline.StoreSpec) (catalogSpec, error) {
	if err := spec.Validate(); err != nil {
		return catalogSpec{}, fmt.Errorf("state: store %q: %w", spec.Name, err)
	}
	return catalogSpec{
		Name: spec.Name, Type: kindOf[spec.Type], Headers: spec.Headers, Logged: spec.Logged,
		Retention: spec.Retention, WindowSize: spec.WindowSize,
		RetainDuplicates: spec.RetainDuplicates, HistoryRetention: spec.HistoryRetention,
		ChangelogVersion: spec.ChangelogVersion,
	}, nil
}

// checkedAs is the engine's store type a catalogued kind is checked as: window stores
// count as timestamped, the way their values are kept.
var checkedAs = map[storeKind]pipeline.StoreType{
	keyValueKind:            pipeline.KeyValueStoreType,
	timestampedKeyValueKind: pipeline.TimestampedKeyValueStoreType,
	windowKind:              pipeline.TimestampedWindowStoreType,
	sessionKind:             pipeline.SessionStoreType,
	versionedKind:           pipeline.VersionedKeyValueStoreType,
}

// valid checks a spec read from the catalogue with the engine's rules.
func (s catalogSpec) valid() bool {
	return pipeline.StoreSpec{
		Name: s.Name, Type: checkedAs[s.Type], Headers: s.Headers, Logged: s.Logged,
		Retention: s.Retention, WindowSize: s.WindowSize,
		RetainDuplicates: s.RetainDuplicates, HistoryRetention: s.HistoryRetention,
	}.Validate() == nil
}

// compatible reports why data written under old cannot be read under s: the kind, the
// value format (headers) and the key format (duplicates) must match; retention, window size
// and logging may change between runs.
func (s catalogSpec) compatible(old catalogSpec) error {
	if s.Type != old.Type || s.Headers != old.Headers || s.RetainDuplicates != old.RetainDuplicates {
		return fmt.Errorf("state: store %q was created as %s (headers %t, duplicates %t) and is now opened as %s (headers %t, duplicates %t); reset the application state to change it",
			s.Name, old.Type, old.Headers, old.RetainDuplicates, s.Type, s.Headers, s.RetainDuplicates)
	}
	return nil
}
