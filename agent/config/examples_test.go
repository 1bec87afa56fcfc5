package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The shipped Kubernetes config listens beyond loopback, so it must name a token file; with
// the Secret's file in place it is valid, without it the agent refuses to start.
func TestKubernetesConfigTakesItsTokenFromTheSecret(t *testing.T) {
	const tokenPath = "/var/run/secrets/stoatflow/http-token"
	data, err := os.ReadFile("../../deploy/kubernetes/agent.toml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if !strings.Contains(text, `http.token.file = "`+tokenPath+`"`) {
		t.Fatalf("deploy/kubernetes/agent.toml names no token file %s", tokenPath)
	}
	dir := t.TempDir()
	for _, f := range []string{"pageviews.lua"} {
		src, err := os.ReadFile(filepath.Join("../../deploy/kubernetes", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), src, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	token := filepath.Join(dir, "http-token")
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	text = strings.ReplaceAll(text, `"/var/lib/stoatflow"`, `"state"`)
	cfg, err := Parse([]byte(strings.ReplaceAll(text, tokenPath, token)), dir, "agent.toml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPToken != "s3cret" || !cfg.HTTPMetricsUnauthenticated || cfg.HTTPAllowUnauthenticated {
		t.Fatalf("token %q, metrics open %v, all open %v", cfg.HTTPToken, cfg.HTTPMetricsUnauthenticated, cfg.HTTPAllowUnauthenticated)
	}
	if _, err := Parse([]byte(strings.ReplaceAll(text, tokenPath, filepath.Join(dir, "absent"))), dir, "agent.toml"); err == nil ||
		!strings.Contains(err.Error(), "agent.http.token.file") {
		t.Fatalf("without the Secret's file: %v", err)
	}
}
