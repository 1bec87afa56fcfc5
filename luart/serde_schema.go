package luart

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// schemaSerde is what stoat.avro{...}, stoat.protobuf{...} and stoat.jsonSchema{...} return:
// the spec of a Schema Registry serde, which becomes a key or a value serde where an option
// takes it (the subject of TopicNameStrategy depends on which). It is plain data, so a test
// file may hand one to a test topic.
type schemaSerde struct {
	name string
	spec schemas.Spec
}

// schemaSerdeFunctions are the stoat module's constructors of Schema Registry serdes.
var schemaSerdeFunctions = map[string]string{"avro": "avro", "protobuf": "protobuf", "jsonSchema": "json-schema"}

// newSchemaSerde implements stoat.avro{schema =, subject =, version =, latest =,
// autoRegister =} (and protobuf's message =); a schema file is relative to the calling script.
func (rt *Runtime) newSchemaSerde(fn, name string) lua.LGFunction {
	return func(L *lua.LState) int {
		set := schemaSerdeOpts
		if name == "protobuf" {
			set = protobufSerdeOpts
		}
		what := "stoat." + fn
		o := options(L, 1, what, set)
		spec := schemas.Spec{Subject: optString(L, o, "subject"), Message: optString(L, o, "message")}
		if file := optString(L, o, "schema"); file != "" {
			path := file
			if !filepath.IsAbs(path) {
				path = filepath.Join(rt.callerDir(), file)
			}
			text, err := readSource(path)
			if err != nil {
				L.RaiseError("%s: schema: %v", what, err)
			}
			spec.Schema, spec.SchemaFile = string(text), displayName(path)
		}
		switch v := o.RawGetString("version").(type) {
		case *lua.LNilType:
		case lua.LNumber:
			if v < 1 || float64(v) != math.Trunc(float64(v)) || v > math.MaxInt32 {
				L.RaiseError("%s: version must be a positive integer, not %v", what, v)
			}
			spec.Version = int(v)
		default:
			L.RaiseError("%s: version must be a number, not a %s", what, v.Type())
		}
		if optBool(L, o, "latest") {
			if spec.Version != 0 {
				L.RaiseError("%s: give version or latest, not both", what)
			}
			spec.Version = schemas.Latest
		}
		if spec.Subject != "" && spec.Version == 0 && spec.Schema == "" {
			// A subject alone means its latest schema.
			spec.Version = schemas.Latest
		}
		if v := o.RawGetString("autoRegister"); v != lua.LNil {
			b := optBool(L, o, "autoRegister")
			spec.AutoRegister = &b
		}
		ss := &schemaSerde{name: name, spec: spec}
		if _, err := rt.schemaFactory().New(name, false, spec); err != nil {
			L.RaiseError("%s: %v", what, err)
		}
		ud := L.NewUserData()
		ud.Value = ss
		L.Push(ud)
		return 1
	}
}

// callerDir is the directory of the script calling into Go.
func (rt *Runtime) callerDir() string {
	file := rt.where()
	if i := strings.LastIndexByte(file, ':'); i > 0 {
		file = file[:i]
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return "."
	}
	return filepath.Dir(abs)
}

// isSchemaSerdeName reports whether name is a Schema Registry serde's.
func isSchemaSerdeName(name string) bool { return slices.Contains(schemas.Names, name) }

// schemaFactory is the runtime's factory for checking a spec where a script gives it; without
// a registry configured, an in-memory one: checking compiles the schema and asks no registry.
func (rt *Runtime) schemaFactory() *schemas.Factory {
	if rt.opts.Schemas != nil {
		return rt.opts.Schemas
	}
	return schemas.NewFactory(schemas.Config{Registry: schemas.NewMemoryRegistry()})
}

// schemaSerdeFor makes the serde of a name or a stoat.avro{...} value, for keys or values.
func (rt *Runtime) schemaSerdeFor(name string, isKey bool, spec schemas.Spec) (pipeline.Serde, error) {
	if rt.opts.Schemas == nil {
		return nil, fmt.Errorf("the %s serde needs a Schema Registry: set schema.registry.url under [streams] (\"embedded\" runs one in process)", name)
	}
	return rt.opts.Schemas.New(name, isKey, spec)
}
