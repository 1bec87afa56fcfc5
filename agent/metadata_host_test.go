package agent

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/query"
)

// On a wildcard listener without application.server, key metadata named the wildcard
// ("[::]:19464"), which no client can reach: it answers Kafka Streams' HostInfo.unavailable()
// instead, and the agent warns at start.
func TestMetadataOnAWildcardListenerIsUnavailable(t *testing.T) {
	brokers := testBroker(t, 3, "in")
	dir := testConfig(t, brokers, queryScript, "").Dir
	text := strings.Replace(agentTOML(brokers, dir, "wild", ""), `http.listen = "127.0.0.1:0"`,
		"http.listen = \"0.0.0.0:0\"\nhttp.token = \"t\"", 1)
	cfg, err := config.Parse([]byte(text), dir, "test.toml")
	if err != nil {
		t.Fatal(err)
	}
	ra := startAgent(t, cfg)
	defer ra.stop(t)
	addr, _ := ra.a.HTTPAddr(t.Context())
	_, port, _ := net.SplitHostPort(addr)
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+port+"/v1/metadata/counts/k0", nil)
	req.Header.Set("Authorization", "Bearer t")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil || got["activeHost"] != query.UnavailableHost {
		t.Fatalf("metadata: %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(ra.logs.String(), "level=WARN msg=\"agent.http.listen is a wildcard address and application.server is unset") {
		t.Fatalf("no warning at start:\n%s", ra.logs.String())
	}
}
