package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Validate loads the Kafka clients' TLS files and the registry's as run does: a truststore
// that holds no certificate passed validate and stopped run.
func TestValidateLoadsTLSFilesAsRunDoes(t *testing.T) {
	for name, extra := range map[string]string{
		"kafka":    "security.protocol = \"SSL\"\nssl.truststore.location = \"junk.pem\"",
		"registry": "schema.registry.url = \"https://sr:8081\"\nschema.registry.ssl.truststore.location = \"junk.pem\"",
	} {
		cfg := testConfig(t, []string{"127.0.0.1:9092"}, "local b = require(\"stoat\").builder()\nb:stream(\"in\"):to(\"out\")\nreturn b", "")
		if err := os.WriteFile(filepath.Join(cfg.Dir, "junk.pem"), []byte("junk"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg = testConfig(t, []string{"127.0.0.1:9092"}, "local b = require(\"stoat\").builder()\nb:stream(\"in\"):to(\"out\")\nreturn b", strings.ReplaceAll(extra, "junk.pem", filepath.Join(cfg.Dir, "junk.pem")))
		if _, err := Validate(cfg); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
			t.Errorf("%s: Validate = %v", name, err)
		}
	}
}
