package luart

import (
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

var update = flag.Bool("update", false, "rewrite the LuaLS definitions in scripts/types/ from the DSL's tables")

// The definitions in scripts/types/ are what luaDefinitions renders.
func TestLuaDefinitionsAreUpToDate(t *testing.T) {
	for name, want := range luaDefinitions() {
		path := filepath.Join("..", "scripts", "types", filepath.FromSlash(name))
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s is out of date with luart's DSL tables; regenerate it with: go test ./luart -run TestLuaDefinitions -update", path)
		}
	}
}

// Every type the runtime builds has exactly the methods dsl_types.go declares, and every
// declared type is built by testdata/dsltypes (so a method added to the DSL without its
// definition, or the other way round, fails here).
func TestLuaDefinitionsMatchTheDSL(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("testdata", "dsltypes"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tf, f := loadTestFile(filepath.Join(dir, "all_test.lua"), DefaultTestTimeout, log, io.Discard)
	if f != nil {
		t.Fatal(f.lines())
	}
	defer tf.close()
	var pipelineRT *Runtime
	for _, test := range tf.tests {
		open := len(tf.drivers)
		tf.running = true
		if f := tf.call(test.fn); f != nil {
			t.Fatal(f.lines())
		}
		tf.running = false
		pipelineRT = tf.drivers[open].rt
	}
	tf.module()
	pipelineRT.stoatModule()
	built := map[string]map[string][]string{
		"stoat":      withModule(pipelineRT.built, "stoat", pipelineRT.stoatModule()),
		"stoat.test": withModule(tf.rt.built, "stoat.test", tf.module()),
	}
	for _, typ := range dslTypes {
		got, ok := built[typ.module][typ.name]
		if !ok {
			t.Errorf("%s (%s): declared in dsl_types.go but testdata/dsltypes never builds it", typ.name, typ.module)
			continue
		}
		if want := typ.methodNames(); !slices.Equal(got, want) {
			t.Errorf("%s (%s): the runtime has %v, dsl_types.go declares %v", typ.name, typ.module, got, want)
		}
		delete(built[typ.module], typ.name)
	}
	for module, types := range built {
		for name, methods := range types {
			if module == "stoat.test" && !testModuleType(name) {
				continue // the stoat module, required by the test file
			}
			t.Errorf("%s (%s) with %v: built by the runtime but missing from dsl_types.go", name, module, methods)
		}
	}
}

// testModuleType reports whether a type the test file's runtime built belongs to stoat.test.
func testModuleType(name string) bool {
	for _, typ := range dslTypes {
		if typ.module == "stoat.test" && typ.name == name {
			return true
		}
	}
	return false
}

// withModule adds a module table's keys, as its type, to what a runtime built.
func withModule(built map[string][]string, name string, mod *lua.LTable) map[string][]string {
	out := map[string][]string{}
	for k, v := range built {
		out[k] = v
	}
	var keys []string
	mod.ForEach(func(k, _ lua.LValue) { keys = append(keys, k.String()) })
	sort.Strings(keys)
	out[name] = keys
	return out
}

// The repository's .luarc.json points LuaLS at the definitions, for the Lua 5.1 scripts
// run in the sandbox.
func TestLuarcPointsAtTheDefinitions(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", ".luarc.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rc struct {
		Version string   `json:"runtime.version"`
		Library []string `json:"workspace.library"`
	}
	if err := json.Unmarshal(data, &rc); err != nil {
		t.Fatal(err)
	}
	if rc.Version != "Lua 5.1" || !slices.Contains(rc.Library, "scripts/types") {
		t.Fatalf(".luarc.json: %+v", rc)
	}
	for name := range luaDefinitions() {
		if _, err := os.Stat(filepath.Join("..", "scripts", "types", filepath.FromSlash(name))); err != nil {
			t.Error(err)
		}
	}
}
