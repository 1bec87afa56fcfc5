package agent

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/luart"
)

// docFile matches a fenced block of docs/serdes.md that is a file: ```lang file=NAME.
var docFile = regexp.MustCompile("(?ms)^```[a-z]+ file=(\\S+)\n(.*?)^```$")

// TestSerdesDocExamplesRun writes the files of docs/serdes.md's examples as they are printed,
// checks its config and scripts as `stoatflow validate` does, and runs its tests with
// `stoatflow test`'s in-memory registry: the examples can be pasted as they are.
func TestSerdesDocExamplesRun(t *testing.T) {
	doc, err := os.ReadFile("../docs/serdes.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var names []string
	for _, m := range docFile.FindAllStringSubmatch(string(doc), -1) {
		names = append(names, m[1])
		if err := os.WriteFile(filepath.Join(dir, m[1]), []byte(m[2]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"agent.toml", "spending.lua", "order.avsc", "summary.avsc", "spending_test.lua"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Fatalf("docs/serdes.md has no file %s (files: %v)", want, names)
		}
	}
	cfg, err := config.Load(filepath.Join(dir, "agent.toml"))
	if err != nil {
		t.Fatalf("the config example: %v", err)
	}
	if _, err := Validate(cfg); err != nil {
		t.Fatalf("the pipeline example does not validate: %v", err)
	}
	var out strings.Builder
	passed, failed, err := luart.RunTests([]string{dir}, luart.TestOptions{Out: &out})
	if err != nil || failed != 0 || passed < 2 {
		t.Fatalf("the test example: %d passed, %d failed, %v:\n%s", passed, failed, err, out.String())
	}
}
