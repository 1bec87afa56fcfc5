package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// validate refuses a listener beyond loopback without a token, naming the key and how to
// set one, unless the file opts out; the token may come from a file.
func TestListenBeyondLoopbackNeedsAToken(t *testing.T) {
	_, err := parse(t, `http.listen = "0.0.0.0:9464"`, "")
	want := `agent.toml:3: agent.http.listen: "0.0.0.0:9464" listens beyond loopback without a token`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "agent.http.token.file") ||
		!strings.Contains(err.Error(), "agent.http.allow.unauthenticated = true") {
		t.Fatalf("got %v, want %q", err, want)
	}
	for _, listen := range []string{":9464", "[::]:9464", "10.0.0.5:9464", "stoat.svc:9464"} {
		if _, err := parse(t, `http.listen = "`+listen+`"`, ""); err == nil {
			t.Errorf("%s without a token: accepted", listen)
		}
	}
	for _, ok := range []string{
		`http.listen = "127.0.0.1:9464"`, `http.listen = "[::1]:9464"`, `http.listen = "localhost:9464"`,
		"http.listen = \"0.0.0.0:9464\"\nhttp.token = \"t\"",
		"http.listen = \"0.0.0.0:9464\"\nhttp.allow.unauthenticated = true",
	} {
		if _, err := parse(t, ok, ""); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

func TestTokenFile(t *testing.T) {
	dir := tempDir(t)
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("token", "  s3cret-from-a-file\r\n")
	write("empty", "\n")
	write("lines", "one\ntwo\n")
	write("large", strings.Repeat("x", maxTokenFileBytes+1))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(agent string) (*Config, error) {
		return Parse([]byte("[agent]\nscripts = [\"wc.lua\"]\nhttp.listen = \"0.0.0.0:9464\"\n"+agent+"\n"+baseStreams), dir, "agent.toml")
	}
	cfg, err := load(`http.token.file = "token"`)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPToken != "s3cret-from-a-file" {
		t.Fatalf("token %q", cfg.HTTPToken)
	}
	for agent, want := range map[string]string{
		`http.token.file = "empty"`:     "empty: it must hold the token",
		`http.token.file = "lines"`:     "holds more than one line",
		`http.token.file = "large"`:     "larger than 4096",
		`http.token.file = "absent"`:    "no such file or directory",
		`http.token.file = "fifo"`:      "not a regular file (a FIFO)",
		`http.token.file = "/dev/zero"`: "not a regular file (a character device)",
		// TOML has a key be a value or a table, not both: quoted, both can be written.
		"\"http.token.file\" = \"token\"\n\"http.token\" = \"t\"": "set together with agent.http.token",
	} {
		_, err := load(agent)
		if err == nil || !strings.Contains(err.Error(), "agent.http.token.file: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", agent, err, want)
		}
	}
}
