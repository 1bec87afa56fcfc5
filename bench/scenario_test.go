package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/luart"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

func TestWindowPairsCountsKeysPerHoppingWindow(t *testing.T) {
	w := newWindowPairs(10, 5)
	// ts 0 and 3 fall in [0,10); 7 in [0,10) and [5,15); 12 in [5,15) and [10,20).
	for _, r := range []struct {
		key string
		ts  int64
	}{{"a", 0}, {"a", 3}, {"b", 7}, {"a", 12}} {
		w.add(r.key, r.ts)
	}
	// [0,10): a, b; [5,15): b, a; [10,20): a.
	if got := w.total(); got != 5 {
		t.Fatalf("total = %d, want 5", got)
	}
	w.add("c", 40) // closes every earlier window; adds [35,45) and [40,50)
	if got := w.total(); got != 7 {
		t.Fatalf("total = %d, want 7", got)
	}
}

func TestParseScenariosKeepsTableOrder(t *testing.T) {
	got, err := parseScenarios("wordcount, ceiling")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].name != "ceiling" || got[1].name != "wordcount" {
		t.Fatalf("got %+v", got)
	}
	if _, err := parseScenarios("ceiling,joins"); err == nil || !strings.Contains(err.Error(), `"joins"`) {
		t.Fatalf("unknown scenario: err = %v", err)
	}
	if _, err := parseScenarios(" , "); err == nil {
		t.Fatal("an empty list was accepted")
	}
}

// The harness waits for the number of outputs its Go expectation computes: check it
// against the scenario scripts themselves, run by the engine without a broker.
func TestExpectedOutputsMatchTheScripts(t *testing.T) {
	for _, name := range []string{"stateless", "stateless-avro", "lua-heavy", "wordcount", "wordcount-1m-keys"} {
		t.Run(name, func(t *testing.T) {
			sc, err := scenarioNamed(name)
			if err != nil {
				t.Fatal(err)
			}
			gen, want := newGenerator(sc.vocabulary), sc.expect()
			gen.json = sc.json
			var sf *schemas.Factory
			if sc.avro {
				if gen.avro, err = newAvroInput(); err != nil {
					t.Fatal(err)
				}
				defer gen.avro.close()
				sf = schemas.NewFactory(schemas.Config{Registry: gen.avro.client, AutoRegister: true})
			}
			d := scriptDriver(t, sc, sf)
			for i := range 2000 {
				key, value, err := gen.record(int64(i))
				if err != nil {
					t.Fatal(err)
				}
				want.add(key, int64(i))
				if err := d.Pipe(inputTopic, []byte(key), value, int64(i), nil); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
			}
			if got := d.Pending(outputTopic); int64(got) != want.total() {
				t.Fatalf("%d outputs, the harness expects %d", got, want.total())
			}
		})
	}
}

func scriptDriver(t *testing.T, sc scenario, sf *schemas.Factory) *pipeline.Driver {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{sc.script, avroSchemaFile} {
		body, err := scripts.ReadFile("scripts/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, sc.script)
	rt, err := luart.New(luart.Options{Stdout: io.Discard, Schemas: sf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	b, err := rt.LoadScripts([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	d, err := pipeline.NewDriver(b, pipeline.DriverOptions{
		Partitions: map[string]int32{inputTopic: partitions, outputTopic: partitions},
		Stores:     pipeline.NewMemoryStores(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestCheckScript(t *testing.T) {
	for _, sc := range scenarios {
		cfg, err := checkScript(sc)
		var unsupported *unsupportedError
		switch {
		case errors.As(err, &unsupported):
			if !strings.HasPrefix(unsupported.msg, "not supported yet") || strings.Contains(unsupported.msg, os.TempDir()) {
				t.Errorf("%s: unsupported message %q", sc.name, unsupported.msg)
			}
		case err != nil:
			t.Errorf("%s: %v", sc.name, err)
		case cfg.ApplicationID != "bench-"+sc.name:
			t.Errorf("%s: application.id %q", sc.name, cfg.ApplicationID)
		}
	}
}
