// Package schemas holds the Schema Registry serdes, avro, protobuf and json-schema, in
// Confluent's wire format: a magic byte 0, the 4-byte big-endian schema id, then the payload
// (Protobuf message indexes first). A record is decoded with the schema its id names,
// fetched once and cached by id; a record is encoded with a schema registered under the
// subject its subject name strategy gives, or the subject's latest version.
//
// The package knows no HTTP: it finds schemas through the Registry interface, which the agent
// implements with a Schema Registry client and `stoatflow test` with MemoryRegistry.
//
// The Go values each format produces and accepts follow one contract, which the Lua runtime
// converts both ways (docs/serdes.md): records, maps and objects are map[string]any, arrays
// []any, null nil, integers int64 (uint64 for Protobuf's unsigned 64-bit beyond int64),
// floating point float64, bytes and fixed []byte, enums their symbol's name. A serde set to
// SetRawValues hands Avro records on undecoded instead (*Raw), for a runtime that builds its
// own values from the bytes through a Builder.
package schemas

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Strategy is a subject name strategy: how a topic and a schema make the subject a record's
// schema is registered under.
type Strategy int

const (
	// TopicNameStrategy: <topic>-key or <topic>-value (Confluent's default).
	TopicNameStrategy Strategy = iota
	// RecordNameStrategy: the record's fully qualified name.
	RecordNameStrategy
	// TopicRecordNameStrategy: <topic>-<fully qualified record name>.
	TopicRecordNameStrategy
)

// StrategyNamed returns the strategy of a Confluent class name or its short name.
func StrategyNamed(name string) (Strategy, error) {
	switch name {
	case "TopicNameStrategy", "io.confluent.kafka.serializers.subject.TopicNameStrategy":
		return TopicNameStrategy, nil
	case "RecordNameStrategy", "io.confluent.kafka.serializers.subject.RecordNameStrategy":
		return RecordNameStrategy, nil
	case "TopicRecordNameStrategy", "io.confluent.kafka.serializers.subject.TopicRecordNameStrategy":
		return TopicRecordNameStrategy, nil
	}
	return 0, fmt.Errorf("unknown subject name strategy %q (known: TopicNameStrategy, RecordNameStrategy, TopicRecordNameStrategy)", name)
}

// Config is what the [streams] serde keys set for every Schema Registry serde.
type Config struct {
	Registry Registry
	// AutoRegister is auto.register.schemas: register a local schema rather than look it up.
	AutoRegister bool
	// UseLatestVersion is use.latest.version: write with the subject's latest schema.
	UseLatestVersion bool
	// KeyStrategy and ValueStrategy are key.subject.name.strategy and value.subject.name.strategy.
	KeyStrategy, ValueStrategy Strategy
	// Timeout bounds one schema lookup, retries included.
	Timeout time.Duration
}

// Spec is what a source or sink says of one serde (the Lua options of stoat.avro{...}).
type Spec struct {
	// Schema is a local schema to write with, and its file for messages.
	Schema     string
	SchemaFile string
	// Subject, when set, replaces the subject name strategy.
	Subject string
	// Version of the subject to write with: 0 = the local schema (or use.latest.version),
	// Latest, or a version number.
	Version int
	// Message is the Protobuf message a local .proto schema writes (default: the first).
	Message string
	// AutoRegister, when set, replaces auto.register.schemas.
	AutoRegister *bool
}

// Factory makes the serdes of one application; decoders are shared by schema id.
type Factory struct {
	cfg      Config
	decoders [3]sync.Map // by format: schema id → codec
	// failed remembers, by format and schema id, a decoder that could not be made, for
	// FailureTTL: a schema that does not parse, or a registry that does not answer, would
	// otherwise be asked again (and its error logged again) for every record.
	failed failures
}

// FailureTTL is how long a schema that could not be fetched or compiled, for reading or
// for writing, is not asked for again: its records fail at once with the same error.
const FailureTTL = 30 * time.Second

// MaxErrorBytes bounds the text of an error about a schema (its parser may quote it whole).
const MaxErrorBytes = 4096

// failures are errors remembered for FailureTTL, by key.
type failures struct{ m sync.Map }

type failure struct {
	err   error
	until time.Time
}

func (f *failures) get(key any) error {
	v, ok := f.m.Load(key)
	if !ok {
		return nil
	}
	if fl := v.(failure); time.Now().Before(fl.until) {
		return fl.err
	}
	f.m.Delete(key)
	return nil
}

func (f *failures) put(key any, err error) {
	f.m.Store(key, failure{err: err, until: time.Now().Add(FailureTTL)})
}

type decoderKey struct{ format, id int }

// NewFactory returns a factory of serdes using cfg.
func NewFactory(cfg Config) *Factory {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	return &Factory{cfg: cfg}
}

// Names are the serde names the factory makes.
var Names = []string{"avro", "protobuf", "json-schema"}

// New returns the serde name ("avro", "protobuf" or "json-schema") for keys or values. A local
// schema in spec is compiled now, so that a bad schema fails the script that names it.
func (f *Factory) New(name string, isKey bool, spec Spec) (pipeline.Serde, error) {
	fm, err := formatNamed(name)
	if err != nil {
		return nil, err
	}
	s := &Serde{f: f, fm: fm, isKey: isKey, spec: spec, writers: map[string]*writer{}, topics: map[string]*writer{}}
	s.strategy = f.cfg.ValueStrategy
	if isKey {
		s.strategy = f.cfg.KeyStrategy
	}
	s.autoRegister = f.cfg.AutoRegister
	if spec.AutoRegister != nil {
		s.autoRegister = *spec.AutoRegister
	}
	if spec.Version == 0 && f.cfg.UseLatestVersion {
		s.spec.Version = Latest
	}
	if spec.Schema != "" {
		local := Schema{Format: fm.schemaFormat(), Text: spec.Schema}
		c, err := fm.compile(local, nil, spec.Message)
		if err != nil {
			return nil, fmt.Errorf("%s serde: schema %s: %w", name, spec.SchemaFile, err)
		}
		s.local = &writer{schema: local, codec: c}
	} else if spec.Message != "" {
		return nil, fmt.Errorf("%s serde: message %q needs a schema file", name, spec.Message)
	}
	if s.strategy != TopicNameStrategy && spec.Subject == "" && s.local == nil {
		return nil, fmt.Errorf("%s serde: the record name strategies need a local schema (its record name makes the subject): give a schema file or a subject", name)
	}
	return s, nil
}

// Serde is one Schema Registry serde, for keys or for values. It is safe for concurrent use.
type Serde struct {
	f            *Factory
	fm           format
	isKey        bool
	spec         Spec
	strategy     Strategy
	autoRegister bool
	local        *writer
	raw          atomic.Bool // see SetRawValues

	mu      sync.Mutex
	writers map[string]*writer // by subject
	topics  map[string]*writer // by topic: a record's writer without making its subject
	failed  failures           // by subject: writers that could not be made (FailureTTL)
}

// writer is a schema records are written with: its id and its compiled codec.
type writer struct {
	schema Schema
	id     int
	codec  codec
	// size is the length of the last record written, the capacity of the next one's buffer.
	size atomic.Int64
}

// codec is one compiled schema of a format.
type codec interface {
	decode(payload []byte) (any, error)
	encode(dst []byte, v any) ([]byte, error)
	// recordName is the fully qualified name the record name strategies use.
	recordName() string
}

// format compiles schemas of one schema type.
type format interface {
	name() string
	schemaFormat() Format
	index() int
	// compile builds the codec of s; refs holds the schemas s references, transitively, each
	// after those it references. message chooses the Protobuf message to write.
	compile(s Schema, refs []namedSchema, message string) (codec, error)
}

func formatNamed(name string) (format, error) {
	switch name {
	case "avro":
		return avroFormat{}, nil
	case "protobuf":
		return protobufFormat{}, nil
	case "json-schema":
		return jsonSchemaFormat{}, nil
	}
	return nil, fmt.Errorf("unknown Schema Registry serde %q (known: avro, protobuf, json-schema)", name)
}

// Name implements pipeline.Serde.
func (s *Serde) Name() string { return s.fm.name() }

// Deserialize decodes a record in Confluent's wire format with the schema its id names.
func (s *Serde) Deserialize(_ string, _ pipeline.Headers, data []byte) (any, error) {
	if data == nil {
		return nil, nil
	}
	id, payload, err := splitHeader(data)
	if err != nil {
		return nil, fmt.Errorf("%s serde: %w", s.fm.name(), err)
	}
	c, err := s.decoder(id)
	if err != nil {
		return nil, fmt.Errorf("%s serde: schema id %d: %w", s.fm.name(), id, err)
	}
	var v any
	if ac, ok := c.(*avroCodec); ok && s.raw.Load() && len(payload) <= maxSharedPayload {
		v, err = ac.check(payload)
	} else {
		v, err = c.decode(payload)
	}
	if err != nil {
		return nil, fmt.Errorf("%s serde: schema id %d: %w", s.fm.name(), id, err)
	}
	return v, nil
}

// Serialize encodes value with the schema of the topic's subject, registering it or looking it
// up on first use.
func (s *Serde) Serialize(topic string, _ pipeline.Headers, value any) ([]byte, error) {
	if value == nil {
		return nil, nil
	}
	w, err := s.writer(topic)
	if err != nil {
		return nil, fmt.Errorf("%s serde: %w", s.fm.name(), err)
	}
	buf := appendHeader(make([]byte, 0, max(64, w.size.Load())), w.id)
	if f, ok := value.(Foreign); ok {
		if ac, ok := w.codec.(*avroCodec); ok {
			if out, err := f.AppendAvro(buf, AvroSchema{ac.root}); err == nil {
				w.size.Store(int64(len(out)))
				return out, nil
			}
		}
	}
	if g, ok := value.(interface{ Value() (any, error) }); ok {
		// A value held undecoded or in another runtime's form, as Go values; the errors are
		// the conversion's own.
		if value, err = g.Value(); err != nil {
			return nil, err
		}
	}
	out, err := w.codec.encode(buf[:headerSize], value)
	if err != nil {
		return nil, fmt.Errorf("%s serde: schema id %d: %w", s.fm.name(), w.id, err)
	}
	w.size.Store(int64(len(out)))
	return out, nil
}

// ErrNoLocalSchema is Typed's answer for a serde without a local schema.
var ErrNoLocalSchema = errors.New("no local schema")

// Typed returns value as the serde's local schema reads it back once written: encoded and
// decoded with it, the registry left alone (a tap shows values so: a long a Lua script holds
// as a decimal string is a number). Without a local schema it answers ErrNoLocalSchema.
func (s *Serde) Typed(value any) (any, error) {
	if s.local == nil {
		return nil, ErrNoLocalSchema
	}
	if g, ok := value.(interface{ Value() (any, error) }); ok {
		var err error
		if value, err = g.Value(); err != nil {
			return nil, err
		}
	}
	b, err := s.local.codec.encode(nil, value)
	if err != nil {
		return nil, err
	}
	return s.local.codec.decode(b)
}

// IsKey reports whether the serde serves keys (the "-key" subjects).
func (s *Serde) IsKey() bool { return s.isKey }

func (s *Serde) decoder(id int) (codec, error) {
	cache := &s.f.decoders[s.fm.index()]
	if c, ok := cache.Load(id); ok {
		return c.(codec), nil
	}
	key := decoderKey{s.fm.index(), id}
	if err := s.f.failed.get(key); err != nil {
		return nil, err
	}
	c, err := s.fetchDecoder(id)
	if err != nil {
		err = CutError(err, MaxErrorBytes)
		s.f.failed.put(key, err)
		return nil, err
	}
	cache.Store(id, c)
	return c, nil
}

// fetchDecoder fetches and compiles the schema of id.
func (s *Serde) fetchDecoder(id int) (codec, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.f.cfg.Timeout)
	defer cancel()
	sch, err := s.f.cfg.Registry.SchemaByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if sch.Format != s.fm.schemaFormat() {
		return nil, fmt.Errorf("the registry holds a %s schema under this id, not %s", sch.Format, s.fm.schemaFormat())
	}
	refs, err := s.references(ctx, sch)
	if err != nil {
		return nil, err
	}
	c, err := s.fm.compile(sch, refs, "")
	if err != nil {
		return nil, fmt.Errorf("registered schema: %w", err)
	}
	return c, nil
}

func (s *Serde) writer(topic string) (*writer, error) {
	s.mu.Lock()
	w := s.topics[topic]
	s.mu.Unlock()
	if w != nil {
		return w, nil
	}
	subject, err := s.subject(topic)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	w = s.writers[subject]
	s.mu.Unlock()
	if w == nil {
		if err := s.failed.get(subject); err != nil {
			return nil, err
		}
		if w, err = s.newWriter(subject); err != nil {
			err = CutError(fmt.Errorf("subject %q: %w", subject, err), MaxErrorBytes)
			s.failed.put(subject, err)
			return nil, err
		}
	}
	s.mu.Lock()
	s.writers[subject] = w
	s.topics[topic] = w
	s.mu.Unlock()
	return w, nil
}

func (s *Serde) subject(topic string) (string, error) {
	if s.spec.Subject != "" {
		return s.spec.Subject, nil
	}
	switch s.strategy {
	case RecordNameStrategy:
		return s.local.codec.recordName(), nil
	case TopicRecordNameStrategy:
		return topic + "-" + s.local.codec.recordName(), nil
	}
	if s.isKey {
		return topic + "-key", nil
	}
	return topic + "-value", nil
}

func (s *Serde) newWriter(subject string) (*writer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.f.cfg.Timeout)
	defer cancel()
	reg := s.f.cfg.Registry
	if s.spec.Version != 0 {
		r, err := reg.Version(ctx, subject, s.spec.Version)
		if err != nil {
			return nil, err
		}
		if r.Format != s.fm.schemaFormat() {
			return nil, fmt.Errorf("the subject holds a %s schema, not %s", r.Format, s.fm.schemaFormat())
		}
		refs, err := s.references(ctx, r.Schema)
		if err != nil {
			return nil, err
		}
		c, err := s.fm.compile(r.Schema, refs, s.spec.Message)
		if err != nil {
			return nil, fmt.Errorf("registered schema id %d: %w", r.ID, err)
		}
		return &writer{schema: r.Schema, id: r.ID, codec: c}, nil
	}
	if s.local == nil {
		return nil, errors.New("no schema to write with: give the serde a schema file or a subject, or set use.latest.version")
	}
	var id int
	var err error
	if s.autoRegister {
		id, err = reg.Register(ctx, subject, s.local.schema)
	} else {
		id, err = reg.LookUp(ctx, subject, s.local.schema)
	}
	if err != nil {
		return nil, err
	}
	return &writer{schema: s.local.schema, id: id, codec: s.local.codec}, nil
}

// maxReferenceDepth bounds how deep schema references may nest.
const maxReferenceDepth = 32

// namedSchema is a referenced schema under its reference name.
type namedSchema struct {
	name   string
	schema Schema
}

// references fetches the schemas sch references, transitively, each after its own.
func (s *Serde) references(ctx context.Context, sch Schema) ([]namedSchema, error) {
	if len(sch.References) == 0 {
		return nil, nil
	}
	var out []namedSchema
	seen := map[string]bool{}
	var walk func(refs []Reference, depth int) error
	walk = func(refs []Reference, depth int) error {
		if depth > maxReferenceDepth {
			return fmt.Errorf("schema references nest deeper than %d (a cycle?)", maxReferenceDepth)
		}
		for _, ref := range refs {
			if seen[ref.Name] {
				continue
			}
			seen[ref.Name] = true
			r, err := s.f.cfg.Registry.Version(ctx, ref.Subject, ref.Version)
			if err != nil {
				return fmt.Errorf("reference %q (subject %q version %d): %w", ref.Name, ref.Subject, ref.Version, err)
			}
			if err := walk(r.References, depth+1); err != nil {
				return err
			}
			out = append(out, namedSchema{name: ref.Name, schema: r.Schema})
		}
		return nil
	}
	if err := walk(sch.References, 0); err != nil {
		return nil, err
	}
	return out, nil
}
