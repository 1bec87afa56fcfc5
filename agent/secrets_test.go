package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/metrics"
)

// TestSecretsStayInTheAgent runs an agent with every kind of secret it sends somewhere (the
// HTTP token, registry credentials in the URL and a registry token) while the registry is
// down, so that its errors are logged, dead-lettered and shown: no log line at any level, no
// dead letter, no HTTP answer holds a secret or a SHA-256 of one.
func TestSecretsStayInTheAgent(t *testing.T) {
	const (
		password = "Tr0ub4dor-registry"
		token    = "Tr0ub4dor-http-token"
		bearer   = "Tr0ub4dor-bearer"
	)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	brokers := testBroker(t, 1, "purchases", "customer-spending", "dlq")
	url := fmt.Sprintf("http://ada:%s@%s", password, down)
	extra := fmt.Sprintf(`schema.registry.url = %q
bearer.auth.token = %q
max.retries = 1
"retries.wait.ms" = 10
http.connect.timeout.ms = 500
deserialization.exception.handler = "LogAndContinue"
errors.dead.letter.queue.topic.name = "dlq"`, url, bearer)
	dir := purchasesConfig(t, brokers, "").Dir
	text := strings.Replace(agentTOML(brokers, dir, "secrets", extra), "[agent]\n", "[agent]\nhttp.token = \""+token+"\"\n", 1)
	cfg, err := config.Parse([]byte(text), dir, "test.toml")
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	ra := startAgentWith(t, cfg, m)
	defer ra.stop(t)
	produceRaw(t, brokers, "purchases", "o1", wire(1, []byte{2, 4}))
	letter := readAll(t, brokers, "dlq", 1)[0]
	ra.waitLog(t, "schema registry request failed; retrying")

	var out strings.Builder
	out.WriteString(ra.logs.String())
	for _, h := range letter.Headers {
		fmt.Fprintf(&out, "%s: %s\n", h.Key, h.Value)
	}
	addr, _ := ra.a.HTTPAddr(t.Context())
	for _, path := range []string{"/-/reload", "/v1/status", "/topology", "/topology/ks", "/v1/stores", "/metrics", "/readyz"} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s", path, resp.Status, body)
		}
		fmt.Fprintf(&out, "GET %s: %s\n", path, body)
	}
	if !strings.Contains(out.String(), "GET /-/reload: {") {
		t.Fatal("no reload state")
	}
	for _, secret := range []string{password, token, bearer} {
		digests := []string{secret, `"` + secret + `"`, url, `"` + url + `"`, `["` + url + `"]`}
		for _, d := range digests {
			sum := sha256.Sum256([]byte(d))
			if strings.Contains(out.String(), hex.EncodeToString(sum[:])) {
				t.Errorf("the agent's output holds a SHA-256 of %q", d)
			}
		}
		if strings.Contains(out.String(), secret) {
			t.Errorf("the agent's output holds %q:\n%s", secret, out.String())
		}
	}
}
