package schemas

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"
)

const cardSchema = `{"type": "record", "name": "Card", "namespace": "com.acme", "fields": [{"name": "number", "type": "string"}]}`

// countingRegistry counts the lookups by id that reach the registry.
type countingRegistry struct {
	*MemoryRegistry
	byID atomic.Int32
}

func (c *countingRegistry) SchemaByID(ctx context.Context, id int) (Schema, error) {
	c.byID.Add(1)
	return c.MemoryRegistry.SchemaByID(ctx, id)
}

func TestSubjectNameStrategies(t *testing.T) {
	for _, c := range []struct {
		strategy Strategy
		isKey    bool
		spec     Spec
		want     string
	}{
		{TopicNameStrategy, false, Spec{}, "cards-value"},
		{TopicNameStrategy, true, Spec{}, "cards-key"},
		{RecordNameStrategy, false, Spec{}, "com.acme.Card"},
		{TopicRecordNameStrategy, true, Spec{}, "cards-com.acme.Card"},
		{RecordNameStrategy, false, Spec{Subject: "fixed"}, "fixed"},
	} {
		reg := NewMemoryRegistry()
		cfg := Config{Registry: reg, AutoRegister: true, KeyStrategy: c.strategy, ValueStrategy: c.strategy}
		c.spec.Schema = cardSchema
		s, err := NewFactory(cfg).New("avro", c.isKey, c.spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Serialize("cards", nil, map[string]any{"number": "1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := reg.Version(t.Context(), c.want, Latest); err != nil {
			t.Errorf("strategy %d key=%v: nothing registered under %q", c.strategy, c.isKey, c.want)
		}
	}
	if _, err := NewFactory(Config{Registry: NewMemoryRegistry(), ValueStrategy: RecordNameStrategy}).New("avro", false, Spec{}); err == nil {
		t.Error("RecordNameStrategy without a local schema was accepted")
	}
	if s, err := StrategyNamed("io.confluent.kafka.serializers.subject.TopicRecordNameStrategy"); err != nil || s != TopicRecordNameStrategy {
		t.Errorf("Confluent's class name: %v, %v", s, err)
	}
}

func TestWriterSchemaChoice(t *testing.T) {
	ctx := t.Context()
	reg := NewMemoryRegistry()
	v1 := Schema{Format: FormatAvro, Text: cardSchema}
	v2 := Schema{Format: FormatAvro, Text: `{"type": "record", "name": "Card", "namespace": "com.acme", "fields": [{"name": "number", "type": "string"}, {"name": "cvc", "type": "string", "default": ""}]}`}
	id1, _ := reg.Register(ctx, "cards-value", v1)
	id2, _ := reg.Register(ctx, "cards-value", v2)
	f := NewFactory(Config{Registry: reg})
	idOf := func(spec Spec) (int, error) {
		s, err := f.New("avro", false, spec)
		if err != nil {
			return 0, err
		}
		b, err := s.Serialize("cards", nil, map[string]any{"number": "1"})
		if err != nil {
			return 0, err
		}
		id, _, err := splitHeader(b)
		return id, err
	}
	if id, err := idOf(Spec{Schema: cardSchema}); err != nil || id != id1 {
		t.Errorf("auto.register.schemas=false, local v1: id %d (%v), want the looked-up %d", id, err, id1)
	}
	if id, err := idOf(Spec{Version: Latest}); err != nil || id != id2 {
		t.Errorf("latest: id %d (%v), want %d", id, err, id2)
	}
	if id, err := idOf(Spec{Subject: "cards-value", Version: 1}); err != nil || id != id1 {
		t.Errorf("version 1: id %d (%v), want %d", id, err, id1)
	}
	_, err := idOf(Spec{Schema: `{"type": "record", "name": "Other", "fields": []}`})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `subject "cards-value"`) {
		t.Errorf("an unregistered local schema without auto-register: %v", err)
	}
	if _, err := idOf(Spec{}); err == nil || !strings.Contains(err.Error(), "no schema to write with") {
		t.Errorf("no schema at all: %v", err)
	}
	latest, err := NewFactory(Config{Registry: reg, UseLatestVersion: true}).New("avro", false, Spec{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := latest.Serialize("cards", nil, map[string]any{"number": "1"})
	if err != nil || int(b[4]) != id2 {
		t.Errorf("use.latest.version: % x (%v), want id %d", b, err, id2)
	}
}

func TestDecodersAreCachedByID(t *testing.T) {
	reg := &countingRegistry{MemoryRegistry: NewMemoryRegistry()}
	f := NewFactory(Config{Registry: reg, AutoRegister: true})
	w, _ := f.New("avro", false, Spec{Schema: cardSchema})
	b, err := w.Serialize("cards", nil, map[string]any{"number": "1"})
	if err != nil {
		t.Fatal(err)
	}
	// Two serdes of one factory share the decoder of an id.
	for _, name := range []string{"avro", "avro"} {
		r, _ := f.New(name, false, Spec{})
		for range 3 {
			if _, err := r.Deserialize("cards", nil, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := reg.byID.Load(); n != 1 {
		t.Fatalf("%d lookups by id for one schema id, want 1", n)
	}
	p, _ := f.New("protobuf", false, Spec{})
	if _, err := p.Deserialize("cards", nil, b); err == nil || !strings.Contains(err.Error(), "holds a AVRO schema under this id, not PROTOBUF") {
		t.Fatalf("an Avro id read by the protobuf serde: %v", err)
	}
}

func TestRegisteredReferences(t *testing.T) {
	ctx := t.Context()
	reg := NewMemoryRegistry()
	if _, err := reg.Register(ctx, "card", Schema{Format: FormatAvro, Text: cardSchema}); err != nil {
		t.Fatal(err)
	}
	wallet := Schema{Format: FormatAvro, Text: `{"type": "record", "name": "Wallet", "namespace": "com.acme", "fields": [{"name": "card", "type": "com.acme.Card"}]}`,
		References: []Reference{{Name: "com.acme.Card", Subject: "card", Version: 1}}}
	id, _ := reg.Register(ctx, "wallets-value", wallet)
	f := NewFactory(Config{Registry: reg})
	s, _ := f.New("avro", false, Spec{Version: Latest})
	b, err := s.Serialize("wallets", nil, map[string]any{"card": map[string]any{"number": "7"}})
	if err != nil || int(b[4]) != id {
		t.Fatalf("wrote % x (%v) with a referencing schema", b, err)
	}
	v, err := s.Deserialize("wallets", nil, b)
	if err != nil || !reflect.DeepEqual(v, map[string]any{"card": map[string]any{"number": "7"}}) {
		t.Fatalf("read %#v (%v)", v, err)
	}

	if _, err := reg.Register(ctx, "card.proto", Schema{Format: FormatProtobuf, Text: `syntax = "proto3"; package acme; message Card { string number = 1; }`}); err != nil {
		t.Fatal(err)
	}
	pw := Schema{Format: FormatProtobuf, Text: `syntax = "proto3"; package acme; import "card.proto"; message Wallet { Card card = 1; }`,
		References: []Reference{{Name: "card.proto", Subject: "card.proto", Version: 1}}}
	reg.Register(ctx, "pwallets-value", pw)
	ps, _ := f.New("protobuf", false, Spec{Version: Latest})
	b, err = ps.Serialize("pwallets", nil, map[string]any{"card": map[string]any{"number": "8"}})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := ps.Deserialize("pwallets", nil, b); err != nil || !reflect.DeepEqual(v, map[string]any{"card": map[string]any{"number": "8"}}) {
		t.Fatalf("protobuf import by reference: %#v (%v)", v, err)
	}

	reg.Register(ctx, "broken-value", Schema{Format: FormatAvro, Text: wallet.Text, References: []Reference{{Name: "com.acme.Card", Subject: "missing", Version: 1}}})
	bs, _ := f.New("avro", false, Spec{Version: Latest})
	if _, err := bs.Serialize("broken", nil, map[string]any{}); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `reference "com.acme.Card"`) {
		t.Fatalf("a missing reference: %v", err)
	}
}

func TestLocalSchemaErrorsAtLoad(t *testing.T) {
	f := NewFactory(Config{Registry: NewMemoryRegistry()})
	for _, c := range []struct {
		name string
		spec Spec
		want string
	}{
		{"avro", Spec{Schema: `{"type": "record"}`, SchemaFile: "bad.avsc"}, "avro serde: schema bad.avsc:"},
		{"protobuf", Spec{Schema: "syntax = \"proto3\";\nmessage A { strin x = 1; }", SchemaFile: "bad.proto"}, "line 2:"},
		{"protobuf", Spec{Schema: `syntax = "proto3"; message A {}`, Message: "B"}, "declares no message B"},
		{"json-schema", Spec{Schema: `{"type": 12}`}, "json-schema serde: schema"},
		{"protobuf", Spec{Message: "A"}, "needs a schema file"},
		{"thrift", Spec{}, "unknown Schema Registry serde"},
	} {
		if _, err := f.New(c.name, false, c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: error %v, want one containing %q", c.name, c.spec, err, c.want)
		}
	}
}

// A registered schema that does not parse is fetched once, not for every record, and its
// error (the parser may quote the schema) is cut: a 3 MB schema made 3 MB log lines.
func TestFailedDecoderIsRemembered(t *testing.T) {
	reg := &countingRegistry{MemoryRegistry: NewMemoryRegistry()}
	broken := `{"type": "record", "name": "` + strings.Repeat("x", 3<<20) // the parser quotes it
	id, err := reg.Register(t.Context(), "cards-value", Schema{Format: FormatAvro, Text: broken})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := NewFactory(Config{Registry: reg}).New("avro", false, Spec{})
	record := []byte{0, 0, 0, 0, byte(id), 2}
	var first error
	for range 5 {
		_, err := r.Deserialize("cards", nil, record)
		if err == nil || len(err.Error()) > MaxErrorBytes+100 || !strings.Contains(err.Error(), "cut from") {
			t.Fatalf("error of %d bytes: %.200v", len(fmt.Sprint(err)), err)
		}
		if first == nil {
			first = err
		} else if err.Error() != first.Error() {
			t.Fatalf("error %q, then %q", first, err)
		}
	}
	if n := reg.byID.Load(); n != 1 {
		t.Fatalf("%d lookups of a schema that does not parse, want 1 within FailureTTL", n)
	}
}

func TestCutText(t *testing.T) {
	if got := CutText("short", 10); got != "short" {
		t.Fatalf("%q", got)
	}
	got := CutText(strings.Repeat("é", 100), 50)
	if len(got) > 50 || !utf8.ValidString(got) || !strings.HasSuffix(got, " ... [cut from 200 bytes]") {
		t.Fatalf("%q", got)
	}
	err := CutError(fmt.Errorf("lookup: %w: %s", ErrNotFound, strings.Repeat("x", 100)), 40)
	if !errors.Is(err, ErrNotFound) || len(err.Error()) > 40 {
		t.Fatalf("%v", err)
	}
}

// Typed gives a value as the local schema reads it back, registering nothing: a long held as
// a decimal string (a Lua script's) comes back a number.
func TestTypedByTheLocalSchema(t *testing.T) {
	reg := NewMemoryRegistry()
	f := NewFactory(Config{Registry: reg, AutoRegister: true})
	s, err := f.New("avro", false, Spec{Schema: `{"type": "record", "name": "Spend", "fields": [{"name": "id", "type": "long"}, {"name": "who", "type": "string"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.(*Serde).Typed(map[string]any{"id": "9007199254741017", "who": "ann"})
	if err != nil || !reflect.DeepEqual(got, map[string]any{"id": int64(9007199254741017), "who": "ann"}) {
		t.Fatalf("typed: %#v, %v", got, err)
	}
	if _, err := reg.SchemaByID(t.Context(), 1); err == nil {
		t.Fatal("Typed registered the schema")
	}
	generic, err := f.New("avro", false, Spec{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := generic.(*Serde).Typed(map[string]any{}); !errors.Is(err, ErrNoLocalSchema) {
		t.Fatalf("without a local schema: %v", err)
	}
}
