package state

import (
	"fmt"
)

// StoreType is the kind of a store.
type StoreType int

const (
	KeyValue StoreType = iota + 1
	TimestampedKeyValue
	Window
	Session
	Versioned
)

var storeTypeNames = map[StoreType]string{
	KeyValue:            "KeyValue",
	TimestampedKeyValue: "TimestampedKeyValue",
	Window:              "Window",
	Session:             "Session",
	Versioned:           "Versioned",
}

func (t StoreType) String() string {
	if n, ok := storeTypeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("StoreType(%d)", int(t))
}

// MarshalText writes the type's name, so the catalogue stays readable.
func (t StoreType) MarshalText() ([]byte, error) {
	if _, ok := storeTypeNames[t]; !ok {
		return nil, fmt.Errorf("unknown store type %d", int(t))
	}
	return []byte(t.String()), nil
}

// UnmarshalText reads a type name written by MarshalText.
func (t *StoreType) UnmarshalText(b []byte) error {
	for k, n := range storeTypeNames {
		if n == string(b) {
			*t = k
			return nil
		}
	}
	return fmt.Errorf("unknown store type %q", b)
}

// StoreSpec describes a store. Times are milliseconds.
type StoreSpec struct {
	Name string
	Type StoreType
	// Headers makes a timestamped key-value or window store keep record headers in its
	// values (KIP-1271).
	Headers bool
	// Logged stores record every write as a changelog record.
	Logged bool
	// Retention (window and session stores): how far behind the observed stream time data
	// stays visible.
	Retention int64
	// WindowSize (window stores) gives each window's end: start + size.
	WindowSize int64
	// RetainDuplicates (window stores) keeps every put under its own sequence number, as
	// stream-stream join stores do.
	RetainDuplicates bool
	// HistoryRetention (versioned stores) is also the grace period for writes.
	HistoryRetention int64
}

func (s StoreSpec) validate() error {
	if s.Name == "" {
		return fmt.Errorf("state: store spec has no name")
	}
	if _, ok := storeTypeNames[s.Type]; !ok {
		return fmt.Errorf("state: store %q: unknown store type %d", s.Name, int(s.Type))
	}
	if s.Headers && s.Type != TimestampedKeyValue && s.Type != Window {
		return fmt.Errorf("state: store %q: not supported yet: headers-aware %s stores", s.Name, s.Type)
	}
	if s.RetainDuplicates && s.Type != Window {
		return fmt.Errorf("state: store %q: RetainDuplicates applies to window stores only, not %s", s.Name, s.Type)
	}
	switch s.Type {
	case Window:
		if s.WindowSize <= 0 {
			return fmt.Errorf("state: window store %q: window size %d must be positive", s.Name, s.WindowSize)
		}
		if s.Retention < s.WindowSize {
			return fmt.Errorf("state: window store %q: retention %d must be at least the window size %d", s.Name, s.Retention, s.WindowSize)
		}
	case Session:
		if s.Retention <= 0 {
			return fmt.Errorf("state: session store %q: retention %d must be positive", s.Name, s.Retention)
		}
	case Versioned:
		if s.HistoryRetention < 0 {
			return fmt.Errorf("state: versioned store %q: history retention %d must not be negative", s.Name, s.HistoryRetention)
		}
	}
	return nil
}

// compatible reports why data written under old cannot be read under s: the type, the
// value format (headers) and the key format (duplicates) must match; retention, window size
// and logging may change between runs.
func (s StoreSpec) compatible(old StoreSpec) error {
	if s.Type != old.Type || s.Headers != old.Headers || s.RetainDuplicates != old.RetainDuplicates {
		return fmt.Errorf("state: store %q was created as %s (headers %t, duplicates %t) and is now opened as %s (headers %t, duplicates %t); reset the application state to change it",
			s.Name, old.Type, old.Headers, old.RetainDuplicates, s.Type, s.Headers, s.RetainDuplicates)
	}
	return nil
}
