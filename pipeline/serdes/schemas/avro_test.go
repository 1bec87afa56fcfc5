package schemas

import (
	"math/big"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
)

func readTestdata(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newTestSerde returns a value serde of format name writing with the schema file, on a fresh
// in-memory registry.
func newTestSerde(t testing.TB, name, file string, spec Spec) (*Serde, *MemoryRegistry) {
	t.Helper()
	reg := NewMemoryRegistry()
	if file != "" {
		spec.Schema, spec.SchemaFile = readTestdata(t, file), file
	}
	s, err := NewFactory(Config{Registry: reg, AutoRegister: true}).New(name, false, spec)
	if err != nil {
		t.Fatal(err)
	}
	return s.(*Serde), reg
}

var (
	created = time.UnixMilli(1_700_000_000_123).UTC()
	// beyond2p53 is a long that a float64 (a Lua 5.1 number) cannot hold exactly.
	beyond2p53 = int64(1)<<53 + 1
)

// hambaOrder is the Order of testdata/order.avsc as hamba/avro's generic encoder takes it.
func hambaOrder() map[string]any {
	return map[string]any{
		"id": beyond2p53, "customer": "ada", "quantity": 3, "price": 9.5, "ratio": float32(0.25), "paid": true,
		"status": "PAID", "tags": []any{"a", "b"}, "attributes": map[string]any{"x": int64(1)},
		"note":    map[string]any{"string": "leave at the door"},
		"payment": map[string]any{"com.acme.Transfer": map[string]any{"iban": "DE89", "bic": "COBADEFF"}},
		"digest":  [4]byte{1, 2, 3, 4}, "blob": []byte{0, 255},
		"created": created, "createdMicros": created, "day": time.Date(2023, 11, 14, 0, 0, 0, 0, time.UTC),
		"amount": big.NewRat(-1250, 100), "uuid": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "channel": "app",
	}
}

// wantOrder is the same Order as the avro serde reads it.
func wantOrder() map[string]any {
	return map[string]any{
		"id": beyond2p53, "customer": "ada", "quantity": int64(3), "price": 9.5, "ratio": 0.25, "paid": true,
		"status": "PAID", "tags": []any{"a", "b"}, "attributes": map[string]any{"x": int64(1)},
		"note":    "leave at the door",
		"payment": map[string]any{"iban": "DE89", "bic": "COBADEFF"},
		"digest":  []byte{1, 2, 3, 4}, "blob": []byte{0, 255},
		"created": created.UnixMilli(), "createdMicros": created.UnixMicro(), "day": int64(19675),
		"amount": "-12.50", "uuid": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "channel": "app",
	}
}

// TestAvroReadsHambaRecords decodes records hamba/avro encoded on its own (the independent
// encoder), framed in the wire format by hand.
func TestAvroReadsHambaRecords(t *testing.T) {
	s, reg := newTestSerde(t, "avro", "", Spec{})
	text := readTestdata(t, "order.avsc")
	id, err := reg.Register(t.Context(), "orders-value", Schema{Format: FormatAvro, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := avro.Marshal(avro.MustParse(text), hambaOrder())
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Deserialize("orders", nil, append([]byte{0, 0, 0, 0, byte(id)}, payload...))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wantOrder()) {
		t.Fatalf("decoded\n%#v\nwant\n%#v", got, wantOrder())
	}
}

// TestAvroWritesWhatHambaReads encodes with the serde and decodes with hamba/avro alone.
func TestAvroWritesWhatHambaReads(t *testing.T) {
	s, reg := newTestSerde(t, "avro", "order.avsc", Spec{})
	b, err := s.Serialize("orders", nil, wantOrder())
	if err != nil {
		t.Fatal(err)
	}
	r, err := reg.Version(t.Context(), "orders-value", Latest)
	if err != nil {
		t.Fatalf("the serde did not register its schema under orders-value: %v", err)
	}
	if b[0] != 0 || int(b[4]) != r.ID || b[1]|b[2]|b[3] != 0 {
		t.Fatalf("header % x, want magic 0 and schema id %d", b[:5], r.ID)
	}
	var got map[string]any
	if err := avro.Unmarshal(avro.MustParse(r.Text), b[5:], &got); err != nil {
		t.Fatal(err)
	}
	want := hambaOrder()
	// hamba/avro's generic decoder reads a nullable union as its value.
	want["note"] = "leave at the door"
	for k, w := range want {
		g := got[k]
		switch w := w.(type) {
		case time.Time:
			if gt, ok := g.(time.Time); !ok || !gt.Equal(w) {
				t.Errorf("%s: hamba read %v, want %v", k, g, w)
			}
		case *big.Rat:
			if gr, ok := g.(*big.Rat); !ok || gr.Cmp(w) != 0 {
				t.Errorf("%s: hamba read %v, want %v", k, g, w)
			}
		default:
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s: hamba read %#v, want %#v", k, g, w)
			}
		}
	}
}

func TestAvroFieldRules(t *testing.T) {
	s, _ := newTestSerde(t, "avro", "order.avsc", Spec{})
	base := func() map[string]any {
		o := wantOrder()
		delete(o, "note")    // nullable: written as null
		delete(o, "channel") // has a default
		return o
	}
	b, err := s.Serialize("orders", nil, base())
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Deserialize("orders", nil, b)
	if err != nil {
		t.Fatal(err)
	}
	got := v.(map[string]any)
	if got["note"] != nil || got["channel"] != "web" {
		t.Fatalf("absent note read %#v, absent channel %#v; want nil and the default \"web\"", got["note"], got["channel"])
	}
	cases := []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"missing required field", func(o map[string]any) { delete(o, "customer") }, "field customer: missing"},
		{"unknown field", func(o map[string]any) { o["custmer"] = "x" }, "has no field custmer"},
		{"wrong enum symbol", func(o map[string]any) { o["status"] = "LOST" }, `no symbol "LOST"`},
		{"int out of range", func(o map[string]any) { o["quantity"] = int64(1) << 40 }, "out of 32-bit range"},
		{"string for double", func(o map[string]any) { o["price"] = "cheap" }, "field price: cannot write as double"},
		{"fixed size", func(o map[string]any) { o["digest"] = "abc" }, "fixed com.acme.Digest of 4 bytes"},
		{"decimal scale", func(o map[string]any) { o["amount"] = "1.234" }, "more than the 2 decimal places"},
		{"no union branch", func(o map[string]any) { o["payment"] = map[string]any{"cash": true} }, "no branch of the union"},
		{"array item", func(o map[string]any) { o["tags"] = []any{"a", int64(2)} }, "field tags: [2]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := base()
			c.edit(o)
			_, err := s.Serialize("orders", nil, o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestAvroUnionBranches(t *testing.T) {
	s, _ := newTestSerde(t, "avro", "order.avsc", Spec{})
	for _, c := range []struct {
		payment any
		want    map[string]any
	}{
		{map[string]any{"number": "4111"}, map[string]any{"number": "4111"}},
		{map[string]any{"iban": "DE89", "bic": "X"}, map[string]any{"iban": "DE89", "bic": "X"}},
		// Avro's JSON form names the branch; the short name works too.
		{map[string]any{"Card": map[string]any{"number": "5500"}}, map[string]any{"number": "5500"}},
	} {
		o := wantOrder()
		o["payment"] = c.payment
		b, err := s.Serialize("orders", nil, o)
		if err != nil {
			t.Fatal(err)
		}
		v, err := s.Deserialize("orders", nil, b)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.(map[string]any)["payment"]; !reflect.DeepEqual(got, c.want) {
			t.Errorf("payment %v read back as %v, want %v", c.payment, got, c.want)
		}
	}
}

func TestAvroDecimalText(t *testing.T) {
	for _, c := range []struct {
		unscaled int64
		scale    int
		want     string
	}{{0, 2, "0.00"}, {5, 2, "0.05"}, {-5, 2, "-0.05"}, {12345, 2, "123.45"}, {-128, 0, "-128"}, {255, 1, "25.5"}} {
		b := twosComplement(big.NewInt(c.unscaled))
		if got := decimalText(b, c.scale); got != c.want {
			t.Errorf("decimal %d scale %d: %q, want %q", c.unscaled, c.scale, got, c.want)
		}
	}
}

func TestAvroRejectsMalformedData(t *testing.T) {
	s, _ := newTestSerde(t, "avro", "order.avsc", Spec{})
	good, err := s.Serialize("orders", nil, wantOrder())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"too short", []byte{0, 0, 0}, "too short for Confluent's wire format"},
		{"magic byte", append([]byte{1}, good[1:]...), "unknown magic byte 1"},
		{"unknown id", append([]byte{0, 0, 0, 0, 99}, good[5:]...), "avro serde: schema id 99: not found"},
		{"truncated", good[:len(good)-3], "ends early"},
		{"trailing bytes", append(append([]byte{}, good...), 7), "1 bytes left after the Avro value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Deserialize("orders", nil, c.data)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestAvroBoundsBlockCounts(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{`{"type": "array", "items": "long"}`, "Avro block of 2147483647 items is larger than the data"},
		{`{"type": "array", "items": "null"}`, "Avro block of 2147483647 items is larger than the data"},
		{`{"type": "map", "values": "null"}`, "Avro block of 2147483647 items is larger than the data"},
	} {
		s, reg := newTestSerde(t, "avro", "", Spec{})
		id, err := reg.Register(t.Context(), "s", Schema{Format: FormatAvro, Text: c.schema})
		if err != nil {
			t.Fatal(err)
		}
		// A block count of 2^31-1 items (zig-zag varint) in a few bytes.
		data := []byte{0, 0, 0, 0, byte(id), 0xfe, 0xff, 0xff, 0xff, 0x0f}
		if _, err := s.Deserialize("t", nil, data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.schema, err, c.want)
		}
	}
}
