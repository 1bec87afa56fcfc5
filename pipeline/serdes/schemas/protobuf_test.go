package schemas

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// protoDescriptor compiles testdata/order.proto with protocompile alone and returns a message.
func protoDescriptor(t testing.TB, message string) protoreflect.MessageDescriptor {
	t.Helper()
	comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{"testdata"}})}
	files, err := comp.Compile(t.Context(), "order.proto")
	if err != nil {
		t.Fatal(err)
	}
	return files[0].FindDescriptorByName(protoreflect.FullName(message)).(protoreflect.MessageDescriptor)
}

// protoOrderJSON is an acme.Order in protojson's form, which the independent encoder parses.
const protoOrderJSON = `{"id": "9007199254740993", "customer": "ada", "quantity": 3, "price": 9.5,
	"big": "18446744073709551615", "status": "PAID", "tags": ["a", "b"], "attributes": {"x": "1"},
	"card": {"number": "4111"}, "created": "2023-11-14T22:13:20.123Z", "limit": "42",
	"blob": "AP8=", "lines": [{"sku": "s1", "count": 2}]}`

func wantProtoOrder() map[string]any {
	return map[string]any{
		"id": beyond2p53, "customer": "ada", "quantity": int64(3), "price": 9.5, "big": uint64(1<<64 - 1),
		"status": "PAID", "tags": []any{"a", "b"}, "attributes": map[string]any{"x": int64(1)},
		"card": map[string]any{"number": "4111"}, "created": "2023-11-14T22:13:20.123Z", "limit": int64(42),
		"blob": []byte{0, 255}, "lines": []any{map[string]any{"sku": "s1", "count": int64(2)}},
	}
}

// TestProtobufReadsIndependentRecords decodes a message built and encoded by protojson and
// proto.Marshal directly, framed by hand: header, then message index [0] as the byte 0.
func TestProtobufReadsIndependentRecords(t *testing.T) {
	s, reg := newTestSerde(t, "protobuf", "", Spec{})
	id, err := reg.Register(t.Context(), "orders-value", Schema{Format: FormatProtobuf, Text: readTestdata(t, "order.proto")})
	if err != nil {
		t.Fatal(err)
	}
	m := dynamicpb.NewMessage(protoDescriptor(t, "acme.Order"))
	if err := protojson.Unmarshal([]byte(protoOrderJSON), m); err != nil {
		t.Fatal(err)
	}
	payload, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Deserialize("orders", nil, append([]byte{0, 0, 0, 0, byte(id), 0}, payload...))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wantProtoOrder()) {
		t.Fatalf("decoded\n%#v\nwant\n%#v", got, wantProtoOrder())
	}
	// Message indexes [1] name the second message, acme.Card.
	card := dynamicpb.NewMessage(protoDescriptor(t, "acme.Card"))
	card.Set(card.Descriptor().Fields().ByName("number"), protoreflect.ValueOfString("5500"))
	payload, _ = proto.Marshal(card)
	got, err = s.Deserialize("orders", nil, append([]byte{0, 0, 0, 0, byte(id), 2, 2}, payload...))
	if err != nil || !reflect.DeepEqual(got, map[string]any{"number": "5500"}) {
		t.Fatalf("message indexes [1]: %#v, %v", got, err)
	}
}

// TestProtobufWritesWhatProtojsonReads encodes with the serde and decodes with proto.Unmarshal.
func TestProtobufWritesWhatProtojsonReads(t *testing.T) {
	s, _ := newTestSerde(t, "protobuf", "order.proto", Spec{Message: "Order"})
	b, err := s.Serialize("orders", nil, wantProtoOrder())
	if err != nil {
		t.Fatal(err)
	}
	if b[5] != 0 {
		t.Fatalf("message indexes byte %d, want the shortcut 0 for the first message", b[5])
	}
	m := dynamicpb.NewMessage(protoDescriptor(t, "acme.Order"))
	if err := proto.Unmarshal(b[6:], m); err != nil {
		t.Fatal(err)
	}
	text, err := protojson.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal(text, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(protoOrderJSON), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("proto.Unmarshal read %s\nwant %s", text, protoOrderJSON)
	}
}

func TestProtobufNestedMessageIndexes(t *testing.T) {
	s, _ := newTestSerde(t, "protobuf", "order.proto", Spec{Message: "acme.Order.Line"})
	b, err := s.Serialize("lines", nil, map[string]any{"sku": "s9", "count": int64(1)})
	if err != nil {
		t.Fatal(err)
	}
	// Order is message 0; its map field's entry type is nested message 0, as in protoc's
	// descriptors, so Line is nested message 1.
	if idx, _, err := readIndexes(b[5:]); err != nil || !reflect.DeepEqual(idx, []int{0, 1}) {
		t.Fatalf("message indexes %v (%v), want [0 1]", idx, err)
	}
	v, err := s.Deserialize("lines", nil, b)
	if err != nil || !reflect.DeepEqual(v, map[string]any{"sku": "s9", "count": int64(1)}) {
		t.Fatalf("read back %#v, %v", v, err)
	}
}

func TestProtobufPresenceAndErrors(t *testing.T) {
	s, _ := newTestSerde(t, "protobuf", "order.proto", Spec{})
	b, err := s.Serialize("orders", nil, map[string]any{"customer": "bo", "note": "hi", "iban": "DE89"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Deserialize("orders", nil, b)
	if err != nil {
		t.Fatal(err)
	}
	got := v.(map[string]any)
	// Fields without presence read as their zero value; unset messages and oneof members are absent.
	if got["id"] != int64(0) || got["status"] != "NEW" || got["note"] != "hi" || got["iban"] != "DE89" {
		t.Errorf("read %#v", got)
	}
	for _, k := range []string{"card", "created", "limit"} {
		if _, ok := got[k]; ok {
			t.Errorf("unset field %s read as %#v", k, got[k])
		}
	}
	if tags, ok := got["tags"].([]any); !ok || len(tags) != 0 {
		t.Errorf("empty repeated field read as %#v, want an empty array", got["tags"])
	}
	for _, c := range []struct {
		v    map[string]any
		want string
	}{
		{map[string]any{"nope": int64(1)}, "has no field nope"},
		{map[string]any{"status": "LOST"}, `has no value "LOST"`},
		{map[string]any{"quantity": "many"}, "field quantity: cannot write as int32"},
		{map[string]any{"created": "yesterday"}, "field created: cannot write"},
	} {
		if _, err := s.Serialize("orders", nil, c.v); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.v, err, c.want)
		}
	}
}

func TestMessageIndexesWireForm(t *testing.T) {
	for _, c := range []struct {
		idx  []int
		want []byte
	}{{[]int{0}, []byte{0}}, {[]int{1}, []byte{2, 2}}, {[]int{0, 2}, []byte{4, 0, 4}}} {
		b := appendIndexes(nil, c.idx)
		if !reflect.DeepEqual(b, c.want) {
			t.Errorf("indexes %v written % x, want % x", c.idx, b, c.want)
		}
		got, rest, err := readIndexes(append(b, 9))
		if err != nil || !reflect.DeepEqual(got, c.idx) || len(rest) != 1 {
			t.Errorf("indexes % x read %v rest %v err %v", b, got, rest, err)
		}
	}
	if _, _, err := readIndexes([]byte{0x80}); err == nil {
		t.Error("a truncated varint was read")
	}
	if _, _, err := readIndexes([]byte{0x7e}); err == nil {
		t.Error("a count of 63 indexes with none following was read")
	}
}

func TestJSONSchemaValidatesBothWays(t *testing.T) {
	s, reg := newTestSerde(t, "json-schema", "order.schema.json", Spec{})
	order := map[string]any{"id": beyond2p53, "customer": "ada", "price": 9.5, "tags": []any{"a"}, "note": nil}
	b, err := s.Serialize("orders", nil, order)
	if err != nil {
		t.Fatal(err)
	}
	// The payload is plain JSON text that encoding/json reads alone.
	var plain map[string]any
	dec := json.NewDecoder(strings.NewReader(string(b[5:])))
	dec.UseNumber()
	if err := dec.Decode(&plain); err != nil || plain["id"] != json.Number("9007199254740993") {
		t.Fatalf("encoding/json read %v (%v)", plain, err)
	}
	v, err := s.Deserialize("orders", nil, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.(map[string]any); got["customer"] != "ada" || got["id"] != json.Number("9007199254740993") {
		t.Fatalf("read %#v", got)
	}
	if _, err := s.Serialize("orders", nil, map[string]any{"id": int64(1)}); err == nil || !strings.Contains(err.Error(), "does not match the JSON schema") {
		t.Fatalf("a record without the required customer: %v", err)
	}
	r, _ := reg.Version(t.Context(), "orders-value", Latest)
	bad := append(appendHeader(nil, r.ID), `{"id": 1, "customer": "x", "price": -1}`...)
	if _, err := s.Deserialize("orders", nil, bad); err == nil || !strings.Contains(err.Error(), "minimum") {
		t.Fatalf("a record with a negative price: %v", err)
	}
}
