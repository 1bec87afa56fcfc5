package schemas

import (
	"fmt"
	"reflect"

	"github.com/hamba/avro/v2"
)

// The Avro serde parses schemas with hamba/avro and compiles them into a tree of nodes that
// its own binary codec walks: records decode straight into the Go values of the package's
// contract (a union reads as its branch's value, as Java's GenericRecord does), without a
// second conversion pass.
type avroFormat struct{}

func (avroFormat) name() string         { return "avro" }
func (avroFormat) schemaFormat() Format { return FormatAvro }
func (avroFormat) index() int           { return 0 }

func (avroFormat) compile(s Schema, refs []namedSchema, _ string) (codec, error) {
	cache := &avro.SchemaCache{}
	for _, r := range refs {
		if _, err := avro.ParseWithCache(r.schema.Text, "", cache); err != nil {
			return nil, fmt.Errorf("referenced schema %q: %w", r.name, err)
		}
	}
	sch, err := avro.ParseWithCache(s.Text, "", cache)
	if err != nil {
		return nil, err
	}
	c := &avroCompiler{named: map[string]*avroNode{}}
	root, err := c.node(sch)
	if err != nil {
		return nil, err
	}
	name := string(sch.Type())
	if n, ok := sch.(avro.NamedSchema); ok {
		name = n.FullName()
	}
	return &avroCodec{root: root, name: name}, nil
}

type avroKind uint8

const (
	avroNull avroKind = iota
	avroBoolean
	avroInt
	avroLong
	avroFloat
	avroDouble
	avroBytes
	avroString
	avroRecord
	avroEnum
	avroArray
	avroMap
	avroUnion
	avroFixed
	avroDecimalBytes
	avroDecimalFixed
)

// avroNode is one compiled schema. Named types are compiled once, so recursive schemas are
// cycles of nodes.
type avroNode struct {
	kind avroKind
	name string // full name of a named type, else the type name

	fields      []avroField    // record
	fieldIndex  map[string]int // record: field name → index
	symbols     []string       // enum
	symbolIndex map[string]int // enum
	items       *avroNode      // array items, map values
	branches    []*avroNode    // union
	nullBranch  int            // union: index of the null branch, or -1
	branchIndex map[string]int // union: branch name (full and short) → index
	size        int            // fixed
	precision   int            // decimal
	scale       int            // decimal
}

type avroField struct {
	name string
	node *avroNode
	// def is the field's default, encoded; nil when the field has none.
	def []byte
}

type avroCompiler struct {
	named map[string]*avroNode
}

func (c *avroCompiler) node(s avro.Schema) (*avroNode, error) {
	switch t := s.(type) {
	case *avro.RefSchema:
		return c.node(t.Schema())
	case *avro.NullSchema:
		return &avroNode{kind: avroNull, name: "null"}, nil
	case *avro.PrimitiveSchema:
		return c.primitive(t)
	case *avro.RecordSchema:
		if n, ok := c.named[t.FullName()]; ok {
			return n, nil
		}
		n := &avroNode{kind: avroRecord, name: t.FullName(), fieldIndex: map[string]int{}}
		c.named[n.name] = n
		for _, f := range t.Fields() {
			fn, err := c.node(f.Type())
			if err != nil {
				return nil, err
			}
			field := avroField{name: f.Name(), node: fn}
			if f.HasDefault() {
				if field.def, err = encodeDefault(fn, f.Default()); err != nil {
					return nil, fmt.Errorf("default of field %s.%s: %w", n.name, f.Name(), err)
				}
			}
			n.fieldIndex[f.Name()] = len(n.fields)
			n.fields = append(n.fields, field)
		}
		return n, nil
	case *avro.EnumSchema:
		if n, ok := c.named[t.FullName()]; ok {
			return n, nil
		}
		n := &avroNode{kind: avroEnum, name: t.FullName(), symbols: t.Symbols(), symbolIndex: map[string]int{}}
		for i, sym := range n.symbols {
			n.symbolIndex[sym] = i
		}
		c.named[n.name] = n
		return n, nil
	case *avro.FixedSchema:
		if n, ok := c.named[t.FullName()]; ok {
			return n, nil
		}
		n := &avroNode{kind: avroFixed, name: t.FullName(), size: t.Size()}
		if d, ok := t.Logical().(*avro.DecimalLogicalSchema); ok {
			n.kind, n.precision, n.scale = avroDecimalFixed, d.Precision(), d.Scale()
		}
		c.named[n.name] = n
		return n, nil
	case *avro.ArraySchema:
		items, err := c.node(t.Items())
		if err != nil {
			return nil, err
		}
		return &avroNode{kind: avroArray, name: "array", items: items}, nil
	case *avro.MapSchema:
		values, err := c.node(t.Values())
		if err != nil {
			return nil, err
		}
		return &avroNode{kind: avroMap, name: "map", items: values}, nil
	case *avro.UnionSchema:
		n := &avroNode{kind: avroUnion, name: "union", nullBranch: -1, branchIndex: map[string]int{}}
		for i, b := range t.Types() {
			bn, err := c.node(b)
			if err != nil {
				return nil, err
			}
			if bn.kind == avroNull {
				n.nullBranch = i
			}
			n.branches = append(n.branches, bn)
			n.branchIndex[bn.name] = i
			if named, ok := b.(avro.NamedSchema); ok {
				n.branchIndex[named.Name()] = i
			} else if ref, ok := b.(*avro.RefSchema); ok {
				n.branchIndex[ref.Schema().Name()] = i
			}
		}
		return n, nil
	}
	return nil, fmt.Errorf("not supported yet: Avro schema type %s", s.Type())
}

func (c *avroCompiler) primitive(t *avro.PrimitiveSchema) (*avroNode, error) {
	n := &avroNode{name: string(t.Type())}
	switch t.Type() {
	case avro.Boolean:
		n.kind = avroBoolean
	case avro.Int:
		n.kind = avroInt
	case avro.Long:
		n.kind = avroLong
	case avro.Float:
		n.kind = avroFloat
	case avro.Double:
		n.kind = avroDouble
	case avro.Bytes:
		n.kind = avroBytes
		if d, ok := t.Logical().(*avro.DecimalLogicalSchema); ok {
			n.kind, n.precision, n.scale = avroDecimalBytes, d.Precision(), d.Scale()
		}
	case avro.String:
		n.kind = avroString
	default:
		return nil, fmt.Errorf("not supported yet: Avro primitive type %s", t.Type())
	}
	return n, nil
}

// encodeDefault encodes a field default as hamba/avro parsed it. A union's default is a
// value of its first branch (Avro specification).
func encodeDefault(n *avroNode, def any) ([]byte, error) {
	v := normalizeDefault(def)
	if n.kind == avroUnion {
		return avroEncode(appendLong(nil, 0), n.branches[0], v)
	}
	return avroEncode(nil, n, v)
}

// normalizeDefault turns hamba/avro's Go forms of defaults into the package's contract.
func normalizeDefault(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case float32:
		return float64(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeDefault(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalizeDefault(e)
		}
		return out
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Array && rv.Type().Elem().Kind() == reflect.Uint8 {
		b := make([]byte, rv.Len())
		reflect.Copy(reflect.ValueOf(b), rv)
		return b
	}
	return v
}

type avroCodec struct {
	root *avroNode
	name string
}

func (c *avroCodec) recordName() string { return c.name }

func (c *avroCodec) decode(payload []byte) (any, error) {
	if len(payload) > maxSharedPayload {
		return decodeAvro(c.root, payload, Builder[any](goBuilder{}))
	}
	return decodeAvro(c.root, string(payload), Builder[any](goBuilder{}))
}

func (c *avroCodec) encode(dst []byte, v any) ([]byte, error) {
	return avroEncode(dst, c.root, v)
}
