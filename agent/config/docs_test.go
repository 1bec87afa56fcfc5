package config

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/config.md from the key tables")

func TestDocsUpToDate(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "config.md")
	want := Markdown()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf("docs/config.md is out of date with agent/config's key tables; regenerate it with: go test ./agent/config -update")
	}
}

func TestMarkdownListsEveryKey(t *testing.T) {
	md := Markdown()
	for _, k := range Keys() {
		if !strings.Contains(md, "`"+k.Name+"`") {
			t.Errorf("docs miss %s", k.FullName())
		}
	}
	for _, name := range unmappedClientKeys {
		if !strings.Contains(md, "`"+name+"`") {
			t.Errorf("docs miss unmapped %s", name)
		}
	}
	if !strings.Contains(md, "| `commit.interval.ms` | duration | `30000 (100 under exactly_once_v2)` |") {
		t.Error("commit.interval.ms row does not show its EOS default")
	}
}

func TestUsage(t *testing.T) {
	u := Usage()
	for _, want := range []string{"[agent]", "scripts", "required", "[streams]", "commit.interval.ms", "linger.ms", "docs/config.md"} {
		if !strings.Contains(u, want) {
			t.Errorf("usage misses %q:\n%s", want, u)
		}
	}
	if strings.Contains(u, "max.warmup.replicas") {
		t.Error("usage lists an ignored key")
	}
}

// --help's key list has every key a file may set, in its section.
func TestUsageListsEveryKey(t *testing.T) {
	usage := Usage()
	for _, k := range Keys() {
		if k.Disposition != Normal {
			continue
		}
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(k.Name) + ` `).MatchString(usage) {
			t.Errorf("%s is missing from Usage()", k.FullName())
		}
	}
}
