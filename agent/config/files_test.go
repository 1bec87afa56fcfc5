package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Files a config names must be regular files: /dev/zero as a script grew validate to
// 1.5 GB and a FIFO hung it. Each is refused at once, naming the key and what the path is.
func TestSpecialFilesAreRefused(t *testing.T) {
	dir := tempDir(t)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for agent, want := range map[string]string{
			`scripts = ["/dev/zero"]`: `agent.scripts: cannot use /dev/zero: not a regular file (a character device)`,
			`scripts = ["fifo"]`:      `agent.scripts: cannot use ` + fifo + `: not a regular file (a FIFO)`,
			"scripts = [\".\"]":       "it is a directory",
			"scripts = [\"wc.lua\"]\nhttp.tls.cert = \"fifo\"\nhttp.tls.key = \"wc.lua\"": "agent.http.tls.cert: cannot use " + fifo + ": not a regular file (a FIFO)",
		} {
			_, err := Parse([]byte("[agent]\n"+agent+"\n"+baseStreams), dir, "agent.toml")
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: got %v, want %q", agent, err, want)
			}
		}
		for _, path := range []string{fifo, "/dev/zero"} {
			if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("Load(%s): %v", path, err)
			}
		}
		big := filepath.Join(dir, "big.toml")
		if err := os.WriteFile(big, make([]byte, MaxConfigBytes+1), 0o600); err != nil {
			t.Error(err)
		}
		if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("Load of a large file: %v", err)
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("a special file hung the config")
	}
}

// The HTTP key pair is loaded with the config, so validate fails where run would.
func TestTLSKeyPairIsLoaded(t *testing.T) {
	dir := tempDir(t)
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := parseIn(dir, "http.tls.cert = \"cert.pem\"\nhttp.tls.key = \"cert.pem\"")
	if err == nil || !strings.Contains(err.Error(), "agent.http.tls.cert: TLS key pair") {
		t.Fatalf("got %v", err)
	}
}

func parseIn(dir, agent string) (*Config, error) {
	return Parse([]byte(baseAgent+agent+"\n"+baseStreams), dir, "agent.toml")
}

// A file nested thousands of levels deep is refused before the decoder, whose time grows
// with the square of the depth (10,000 levels took 32 s).
func TestDeepNestingIsRefused(t *testing.T) {
	const n = 10000
	for name, text := range map[string]string{
		"inline tables": "[agent]\nx = " + strings.Repeat("{a=", n) + "1" + strings.Repeat("}", n) + "\n",
		"arrays":        "[agent]\nx = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n",
		"dotted key":    "[agent]\n" + strings.Repeat("a.", n) + "b = 1\n",
		"table header":  "[" + strings.Repeat("a.", n) + "b]\nc = 1\n",
	} {
		_, err := Parse([]byte(text), t.TempDir(), "agent.toml")
		if err == nil || !strings.Contains(err.Error(), "nested more than 64 levels deep") {
			t.Errorf("%s: %.200v", name, err)
		}
	}
	// What looks like nesting inside strings and comments is not.
	ok := baseAgent + "# [[[[{{{{ " + strings.Repeat("a.", 100) + "\nlog.level = \"info\" # " + strings.Repeat("[", 100) + "\n" +
		"[streams]\napplication.id = \"wordcount\"\nbootstrap.servers = '" + strings.Repeat("[", 100) + "'\n" +
		`"quoted.` + strings.Repeat("x.", 100) + `" = """` + "\n" + strings.Repeat("{", 100) + "\n\"\"\"\n"
	if _, err := Parse([]byte(ok), tempDir(t), "agent.toml"); err != nil && strings.Contains(err.Error(), "nested") {
		t.Fatalf("strings and comments counted as nesting: %v", err)
	}
}
