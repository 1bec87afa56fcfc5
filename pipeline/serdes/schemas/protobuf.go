package schemas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// The protobuf serde compiles .proto schemas at load time with bufbuild/protocompile (the
// google/protobuf/*.proto well-known files are built in, as Confluent's serializer assumes)
// and reads and writes dynamicpb messages. A record's message indexes choose its message in
// the file; writing uses the serde's message (default: the file's first).
type protobufFormat struct{}

func (protobufFormat) name() string         { return "protobuf" }
func (protobufFormat) schemaFormat() Format { return FormatProtobuf }
func (protobufFormat) index() int           { return 1 }

// protoRoot is the file name the compiled schema is known by; references keep their names,
// which are import paths.
const protoRoot = "stoatflow-schema.proto"

func (protobufFormat) compile(s Schema, refs []namedSchema, message string) (codec, error) {
	files := map[string]string{protoRoot: s.Text}
	for _, r := range refs {
		files[r.name] = r.schema.Text
	}
	comp := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{Accessor: protocompile.SourceAccessorFromMap(files)}),
	}
	out, err := comp.Compile(context.Background(), protoRoot)
	if err != nil {
		return nil, strippedProtoError(err)
	}
	fd := out[0]
	if fd.Messages().Len() == 0 {
		return nil, errors.New("the schema declares no message")
	}
	c := &protobufCodec{file: fd}
	if message == "" {
		c.write = fd.Messages().Get(0)
	} else {
		name := protoreflect.FullName(message)
		if !strings.Contains(message, ".") && fd.Package() != "" {
			name = fd.Package().Append(protoreflect.Name(message))
		}
		d := fd.FindDescriptorByName(name)
		md, ok := d.(protoreflect.MessageDescriptor)
		if !ok {
			return nil, fmt.Errorf("the schema declares no message %s", name)
		}
		c.write = md
	}
	c.writeIndexes = messageIndexes(c.write)
	return c, nil
}

// strippedProtoError drops the made-up file name from compile errors, keeping line:column.
func strippedProtoError(err error) error {
	return errors.New(strings.ReplaceAll(err.Error(), protoRoot+":", "line "))
}

// messageIndexes is the path of md among the messages of its file: Confluent's message indexes.
func messageIndexes(md protoreflect.MessageDescriptor) []int {
	var idx []int
	for d := protoreflect.Descriptor(md); ; {
		idx = append([]int{d.Index()}, idx...)
		parent, ok := d.Parent().(protoreflect.MessageDescriptor)
		if !ok {
			return idx
		}
		d = parent
	}
}

type protobufCodec struct {
	file         protoreflect.FileDescriptor
	write        protoreflect.MessageDescriptor
	writeIndexes []int
}

func (c *protobufCodec) recordName() string { return string(c.write.FullName()) }

func (c *protobufCodec) message(idx []int) (protoreflect.MessageDescriptor, error) {
	msgs := c.file.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range idx {
		if i >= msgs.Len() {
			return nil, fmt.Errorf("message indexes %v name no message of the schema", idx)
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	return md, nil
}

func (c *protobufCodec) decode(payload []byte) (any, error) {
	idx, rest, err := readIndexes(payload)
	if err != nil {
		return nil, err
	}
	md, err := c.message(idx)
	if err != nil {
		return nil, err
	}
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(rest, m); err != nil {
		return nil, fmt.Errorf("message %s: %w", md.FullName(), err)
	}
	return protoMessageValue(m)
}

func (c *protobufCodec) encode(dst []byte, v any) ([]byte, error) {
	m := dynamicpb.NewMessage(c.write)
	if err := setProtoMessage(m, v); err != nil {
		return dst, fmt.Errorf("message %s: %w", c.write.FullName(), err)
	}
	dst = appendIndexes(dst, c.writeIndexes)
	out, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(dst, m)
	if err != nil {
		return dst, fmt.Errorf("message %s: %w", c.write.FullName(), err)
	}
	return out, nil
}

// Well-known types read and write as protojson renders them (a Timestamp as RFC 3339 text,
// a Duration as "1.5s", a Struct as a table); wrappers are their plain value.
var (
	protojsonTypes = map[protoreflect.FullName]bool{
		"google.protobuf.Timestamp": true, "google.protobuf.Duration": true, "google.protobuf.FieldMask": true,
		"google.protobuf.Struct": true, "google.protobuf.Value": true, "google.protobuf.ListValue": true,
	}
	wrapperTypes = map[protoreflect.FullName]bool{
		"google.protobuf.DoubleValue": true, "google.protobuf.FloatValue": true, "google.protobuf.Int64Value": true,
		"google.protobuf.UInt64Value": true, "google.protobuf.Int32Value": true, "google.protobuf.UInt32Value": true,
		"google.protobuf.BoolValue": true, "google.protobuf.StringValue": true, "google.protobuf.BytesValue": true,
	}
)

// protoMessageValue is the Go value of a message: a map of field names (as in the .proto) to
// values. Fields without presence are always there (their zero value when unset); fields with
// presence (messages, optional, oneof members) only when set.
func protoMessageValue(m protoreflect.Message) (any, error) {
	md := m.Descriptor()
	if protojsonTypes[md.FullName()] {
		b, err := protojson.Marshal(m.Interface())
		if err != nil {
			return nil, err
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return nil, err
		}
		return v, nil
	}
	if wrapperTypes[md.FullName()] {
		fd := md.Fields().ByName("value")
		return protoFieldValue(fd, m.Get(fd))
	}
	fields := md.Fields()
	out := make(map[string]any, fields.Len())
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.HasPresence() && !m.Has(fd) {
			continue
		}
		v, err := protoFieldValue(fd, m.Get(fd))
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", fd.Name(), err)
		}
		out[string(fd.Name())] = v
	}
	return out, nil
}

func protoFieldValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) (any, error) {
	switch {
	case fd.IsList():
		l := v.List()
		out := make([]any, l.Len())
		for i := range l.Len() {
			e, err := protoScalarValue(fd, l.Get(i))
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case fd.IsMap():
		out := map[string]any{}
		var err error
		v.Map().Range(func(k protoreflect.MapKey, e protoreflect.Value) bool {
			var ev any
			if ev, err = protoScalarValue(fd.MapValue(), e); err != nil {
				return false
			}
			out[k.String()] = ev
			return true
		})
		return out, err
	}
	return protoScalarValue(fd, v)
}

func protoScalarValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) (any, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return v.Bool(), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return v.Int(), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if u := v.Uint(); u > math.MaxInt64 {
			return u, nil
		}
		return int64(v.Uint()), nil
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return v.Float(), nil
	case protoreflect.StringKind:
		return v.String(), nil
	case protoreflect.BytesKind:
		return append([]byte(nil), v.Bytes()...), nil
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name()), nil
		}
		// An unknown number (a newer writer) stays a number, as proto3 keeps it.
		return int64(v.Enum()), nil
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return protoMessageValue(v.Message())
	}
	return nil, fmt.Errorf("not supported yet: Protobuf field kind %s", fd.Kind())
}

// setProtoMessage fills m from a table of field names to values; null leaves a field unset.
func setProtoMessage(m protoreflect.Message, v any) error {
	md := m.Descriptor()
	if protojsonTypes[md.FullName()] {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("cannot write %s as %s: %w", describe(v), md.FullName(), err)
		}
		if err := protojson.Unmarshal(b, m.Interface()); err != nil {
			return fmt.Errorf("cannot write %s as %s: %w", describe(v), md.FullName(), err)
		}
		return nil
	}
	if wrapperTypes[md.FullName()] {
		fd := md.Fields().ByName("value")
		pv, err := protoScalar(fd, v)
		if err != nil {
			return err
		}
		m.Set(fd, pv)
		return nil
	}
	fields, ok := asMap(v)
	if !ok {
		return fmt.Errorf("cannot write %s as message %s", describe(v), md.FullName())
	}
	for name, fv := range fields {
		fd := md.Fields().ByName(protoreflect.Name(name))
		if fd == nil {
			fd = md.Fields().ByJSONName(name)
		}
		if fd == nil {
			return fmt.Errorf("message %s has no field %s", md.FullName(), name)
		}
		if fv == nil {
			continue
		}
		if err := setProtoField(m, fd, fv); err != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
	}
	return nil
}

func setProtoField(m protoreflect.Message, fd protoreflect.FieldDescriptor, v any) error {
	switch {
	case fd.IsList():
		items, ok := asArray(v)
		if !ok {
			return fmt.Errorf("cannot write %s as a repeated field", describe(v))
		}
		l := m.Mutable(fd).List()
		for i, e := range items {
			pv, err := protoElem(l.NewElement, fd, e)
			if err != nil {
				return fmt.Errorf("[%d]: %w", i+1, err)
			}
			l.Append(pv)
		}
		return nil
	case fd.IsMap():
		entries, ok := asMap(v)
		if !ok {
			return fmt.Errorf("cannot write %s as a map", describe(v))
		}
		mp := m.Mutable(fd).Map()
		for k, e := range entries {
			mk, err := protoMapKey(fd.MapKey(), k)
			if err != nil {
				return err
			}
			pv, err := protoElem(mp.NewValue, fd.MapValue(), e)
			if err != nil {
				return fmt.Errorf("[%q]: %w", k, err)
			}
			mp.Set(mk, pv)
		}
		return nil
	case fd.Message() != nil:
		sub := m.Mutable(fd).Message()
		return setProtoMessage(sub, v)
	}
	pv, err := protoScalar(fd, v)
	if err != nil {
		return err
	}
	m.Set(fd, pv)
	return nil
}

// protoElem converts a list element or map value; messages are built in a new value.
func protoElem(newValue func() protoreflect.Value, fd protoreflect.FieldDescriptor, v any) (protoreflect.Value, error) {
	if fd.Message() != nil {
		pv := newValue()
		if v == nil {
			return pv, nil
		}
		return pv, setProtoMessage(pv.Message(), v)
	}
	return protoScalar(fd, v)
}

func protoMapKey(fd protoreflect.FieldDescriptor, k string) (protoreflect.MapKey, error) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(k).MapKey(), nil
	case protoreflect.BoolKind:
		b, err := strconv.ParseBool(k)
		if err != nil {
			return protoreflect.MapKey{}, fmt.Errorf("map key %q is not a boolean", k)
		}
		return protoreflect.ValueOfBool(b).MapKey(), nil
	}
	v, err := protoScalar(fd, k)
	if err != nil {
		return protoreflect.MapKey{}, fmt.Errorf("map key %q: %w", k, err)
	}
	return v.MapKey(), nil
}

func protoScalar(fd protoreflect.FieldDescriptor, v any) (protoreflect.Value, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		b, ok := v.(bool)
		if !ok {
			return protoreflect.Value{}, fmt.Errorf("cannot write %s as bool", describe(v))
		}
		return protoreflect.ValueOfBool(b), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		i, err := toInt32(v)
		if err != nil {
			return protoreflect.Value{}, fmt.Errorf("cannot write as %s: %w", fd.Kind(), err)
		}
		return protoreflect.ValueOfInt32(i), nil
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		i, err := toInt64(v)
		if err != nil {
			return protoreflect.Value{}, fmt.Errorf("cannot write as %s: %w", fd.Kind(), err)
		}
		return protoreflect.ValueOfInt64(i), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		u, err := toUint64(v)
		if err != nil || u > math.MaxUint32 {
			return protoreflect.Value{}, fmt.Errorf("cannot write %s as %s", describe(v), fd.Kind())
		}
		return protoreflect.ValueOfUint32(uint32(u)), nil
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		u, err := toUint64(v)
		if err != nil {
			return protoreflect.Value{}, fmt.Errorf("cannot write as %s: %w", fd.Kind(), err)
		}
		return protoreflect.ValueOfUint64(u), nil
	case protoreflect.FloatKind:
		f, err := toFloat64(v)
		if err != nil {
			return protoreflect.Value{}, fmt.Errorf("cannot write as float: %w", err)
		}
		return protoreflect.ValueOfFloat32(float32(f)), nil
	case protoreflect.DoubleKind:
		f, err := toFloat64(v)
		if err != nil {
			return protoreflect.Value{}, fmt.Errorf("cannot write as double: %w", err)
		}
		return protoreflect.ValueOfFloat64(f), nil
	case protoreflect.StringKind:
		s, ok := v.(string)
		if !ok {
			return protoreflect.Value{}, fmt.Errorf("cannot write %s as string", describe(v))
		}
		return protoreflect.ValueOfString(s), nil
	case protoreflect.BytesKind:
		b, ok := toBytes(v)
		if !ok {
			return protoreflect.Value{}, fmt.Errorf("cannot write %s as bytes", describe(v))
		}
		return protoreflect.ValueOfBytes(b), nil
	case protoreflect.EnumKind:
		if s, ok := v.(string); ok {
			ev := fd.Enum().Values().ByName(protoreflect.Name(s))
			if ev == nil {
				return protoreflect.Value{}, fmt.Errorf("enum %s has no value %q", fd.Enum().FullName(), s)
			}
			return protoreflect.ValueOfEnum(ev.Number()), nil
		}
		i, err := toInt32(v)
		if err != nil {
			return protoreflect.Value{}, fmt.Errorf("cannot write %s as enum %s (give a value's name)", describe(v), fd.Enum().FullName())
		}
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber(i)), nil
	}
	return protoreflect.Value{}, fmt.Errorf("not supported yet: Protobuf field kind %s", fd.Kind())
}
