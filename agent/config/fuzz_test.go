package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary files to the config loader: it never panics, a file it rejects
// comes back as *Errors whose every line names the file and either a key or the TOML
// problem of the file as a whole, and the same file always gives the same answer (validate's
// output is stable).
func FuzzParse(f *testing.F) {
	dir := f.TempDir()
	for _, s := range []string{"wc.lua", "p.lua"} {
		if err := os.WriteFile(filepath.Join(dir, s), []byte("return nil"), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	const source = "fuzz.toml"
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, dir, source)
		if err == nil {
			if cfg == nil {
				t.Fatalf("Parse(%q) returned neither a config nor an error", data)
			}
			for _, n := range cfg.Notices {
				if n.Key == "" || n.Message == "" || !n.Kind.Notice() {
					t.Fatalf("Parse(%q): notice %+v names no key, says nothing or is not a notice", data, n)
				}
			}
			return
		}
		if cfg != nil {
			t.Fatalf("Parse(%q) returned a config together with %v", data, err)
		}
		var errs *Errors
		if !errors.As(err, &errs) {
			t.Fatalf("Parse(%q): error %T %v, want *Errors", data, err, err)
		}
		if errs.Source != source || len(errs.Problems) == 0 {
			t.Fatalf("Parse(%q): Errors{Source: %q, %d problems}", data, errs.Source, len(errs.Problems))
		}
		for _, p := range errs.Problems {
			if p.Message == "" {
				t.Fatalf("Parse(%q): problem %+v has no message", data, p)
			}
			if p.Kind < KindUnreadable || p.Kind > KindIgnored || p.Kind.Notice() {
				t.Fatalf("Parse(%q): problem %+v is of no error kind", data, p)
			}
			// A problem without a key is about the file as a whole: its TOML.
			if p.Key == "" && !strings.HasPrefix(p.Message, "TOML") {
				t.Fatalf("Parse(%q): problem %q names no key", data, p.Format(source))
			}
			if line := p.Format(source); !strings.HasPrefix(line, source+":") {
				t.Fatalf("Parse(%q): problem line %q does not start with the file name", data, line)
			}
		}
		if _, again := Parse(data, dir, source); again == nil || again.Error() != err.Error() {
			t.Fatalf("Parse(%q) is not deterministic:\n%v\nthen\n%v", data, err, again)
		}
	})
}
