package schemas

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Format is a schema type as the Schema Registry names it.
type Format string

const (
	FormatAvro     Format = "AVRO"
	FormatProtobuf Format = "PROTOBUF"
	FormatJSON     Format = "JSON"
)

// Schema is a schema as the registry stores it.
type Schema struct {
	Format     Format
	Text       string
	References []Reference
}

// Reference names another registered schema a schema imports: a Protobuf import path, an
// Avro type's full name or a JSON Schema $ref URL.
type Reference struct {
	Name    string
	Subject string
	Version int
}

// Registered is a schema under a subject.
type Registered struct {
	Schema
	ID      int
	Subject string
	Version int
}

// ErrNotFound is wrapped by a Registry's errors for an id, subject or version it does not
// hold: retrying does not help.
var ErrNotFound = errors.New("not found in the schema registry")

// Registry is where the serdes find schemas: a Schema Registry over HTTP, or the in-memory
// one of `stoatflow test`. Implementations are safe for concurrent use (interactive queries
// decode on their own goroutines) and bound every call in time, retrying what is transient.
type Registry interface {
	// SchemaByID returns the schema with the given id.
	SchemaByID(ctx context.Context, id int) (Schema, error)
	// Register registers s under subject, or finds it there, and returns its id
	// (auto.register.schemas).
	Register(ctx context.Context, subject string, s Schema) (int, error)
	// LookUp returns the id of s, which must already be registered under subject.
	LookUp(ctx context.Context, subject string, s Schema) (int, error)
	// Version returns a version of subject; version -1 is the latest (use.latest.version).
	Version(ctx context.Context, subject string, version int) (Registered, error)
}

// Latest is the version number Registry.Version reads as the subject's latest.
const Latest = -1

// MemoryRegistry is an in-process Registry: ids count from 1 across subjects, and a schema
// registered again under a subject keeps its id and version, as in Confluent's registry. It
// checks no compatibility.
type MemoryRegistry struct {
	mu       sync.Mutex
	byID     []Schema // id i at i-1
	subjects map[string][]int
}

// NewMemoryRegistry returns an empty in-memory registry.
func NewMemoryRegistry() *MemoryRegistry {
	return &MemoryRegistry{subjects: map[string][]int{}}
}

// SchemaByID implements Registry.
func (m *MemoryRegistry) SchemaByID(_ context.Context, id int) (Schema, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id < 1 || id > len(m.byID) {
		return Schema{}, ErrNotFound // the caller names the id
	}
	return m.byID[id-1], nil
}

// Register implements Registry.
func (m *MemoryRegistry) Register(_ context.Context, subject string, s Schema) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id := m.find(subject, s); id > 0 {
		return id, nil
	}
	id := 0
	for i, have := range m.byID {
		if sameSchema(have, s) {
			id = i + 1
			break
		}
	}
	if id == 0 {
		m.byID = append(m.byID, s)
		id = len(m.byID)
	}
	m.subjects[subject] = append(m.subjects[subject], id)
	return id, nil
}

// LookUp implements Registry.
func (m *MemoryRegistry) LookUp(_ context.Context, subject string, s Schema) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id := m.find(subject, s); id > 0 {
		return id, nil
	}
	return 0, fmt.Errorf("schema under subject %q: %w", subject, ErrNotFound)
}

// Version implements Registry.
func (m *MemoryRegistry) Version(_ context.Context, subject string, version int) (Registered, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := m.subjects[subject]
	if version == Latest {
		version = len(ids)
	}
	if version < 1 || version > len(ids) {
		return Registered{}, fmt.Errorf("subject %q version %d: %w", subject, version, ErrNotFound)
	}
	id := ids[version-1]
	return Registered{Schema: m.byID[id-1], ID: id, Subject: subject, Version: version}, nil
}

func (m *MemoryRegistry) find(subject string, s Schema) int {
	for _, id := range m.subjects[subject] {
		if sameSchema(m.byID[id-1], s) {
			return id
		}
	}
	return 0
}

func sameSchema(a, b Schema) bool {
	return a.Format == b.Format && a.Text == b.Text && slices.Equal(a.References, b.References)
}
