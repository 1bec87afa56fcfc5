package agent

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Over TLS, an agent reaches the other agents of its streams group when they present its
// own certificate (or one of its chain's issuers), which the system's roots do not trust;
// and it follows no redirect.
func TestPeerClientTrustsTheAgentsOwnCertificate(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/", http.StatusTemporaryRedirect)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	if resp, err := peerClient(nil).Get(srv.URL); err == nil {
		resp.Body.Close()
		t.Fatal("a client without the agent's certificate trusted it")
	}
	c := peerClient(srv.TLS)
	for path, want := range map[string]int{"/": http.StatusNoContent, "/moved": http.StatusTemporaryRedirect} {
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}
