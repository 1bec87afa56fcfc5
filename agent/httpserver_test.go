package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/metrics"
)

func startServer(t *testing.T, opts HTTPOptions) (*HTTPServer, *StateMachine) {
	t.Helper()
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	state := NewStateMachine(nil)
	s, err := NewHTTPServer(opts, state, metrics.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return s, state
}

type answer struct {
	status int
	header http.Header
	body   map[string]string
	raw    string
}

func call(t *testing.T, client *http.Client, method, url, token string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &a.body); err != nil {
			t.Fatalf("%s %s: body %q is not a JSON object of strings: %v", method, url, raw, err)
		}
	}
	return a
}

func get(t *testing.T, s *HTTPServer, path string) answer {
	t.Helper()
	return call(t, http.DefaultClient, http.MethodGet, "http://"+s.Addr()+path, "")
}

func wantError(t *testing.T, a answer, status int, code string) {
	t.Helper()
	if a.status != status || a.body["code"] != code || a.body["error"] == "" {
		t.Errorf("got %d %q, want %d with JSON error code %q", a.status, a.raw, status, code)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	s, state := startServer(t, HTTPOptions{})
	if a := get(t, s, "/healthz"); a.status != http.StatusOK || a.body["status"] != "UP" {
		t.Errorf("/healthz = %d %q", a.status, a.raw)
	}
	for _, step := range []struct {
		to     AppState
		status int
	}{
		{StateCreated, http.StatusServiceUnavailable},
		{StateRebalancing, http.StatusServiceUnavailable},
		{StateRunning, http.StatusOK},
		{StatePendingShutdown, http.StatusServiceUnavailable},
	} {
		if step.to != StateCreated {
			if err := state.Transition(step.to); err != nil {
				t.Fatal(err)
			}
		}
		a := get(t, s, "/readyz")
		if a.status != step.status || a.body["state"] != step.to.String() {
			t.Errorf("/readyz in %s = %d %q, want %d", step.to, a.status, a.raw, step.status)
		}
	}
}

func TestMetricsEndpoint(t *testing.T) {
	s, _ := startServer(t, HTTPOptions{})
	a := get(t, s, "/metrics")
	if a.status != http.StatusOK || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics = %d %s", a.status, a.header.Get("Content-Type"))
	}
	if !strings.Contains(a.raw, "stoatflow_processor_records_dropped_total{reason=\"late\"} 0") {
		t.Errorf("/metrics lacks the StoatFlow registry:\n%s", a.raw)
	}
}

func TestErrorsAreJSON(t *testing.T) {
	s, _ := startServer(t, HTTPOptions{})
	s.Handle("GET /v1/things/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"id": r.PathValue("id")})
	}))
	if a := get(t, s, "/v1/things/a%2Fb"); a.status != http.StatusOK || a.body["id"] != "a/b" {
		t.Errorf("registered route = %d %q", a.status, a.raw)
	}
	wantError(t, get(t, s, "/nope"), http.StatusNotFound, "not_found")
	wantError(t, get(t, s, "/"), http.StatusNotFound, "not_found")

	for _, path := range []string{"/healthz", "/metrics", "/v1/things/x"} {
		a := call(t, http.DefaultClient, http.MethodPost, "http://"+s.Addr()+path, "")
		wantError(t, a, http.StatusMethodNotAllowed, "method_not_allowed")
		if !strings.Contains(a.header.Get("Allow"), "GET") {
			t.Errorf("POST %s: Allow = %q", path, a.header.Get("Allow"))
		}
	}
}

func TestBearerToken(t *testing.T) {
	s, _ := startServer(t, HTTPOptions{Token: "s3cret"})
	base := "http://" + s.Addr()
	cases := []struct {
		path, token string
		status      int
	}{
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", "wrong", http.StatusUnauthorized},
		{"/metrics", "s3cret", http.StatusOK},
		{"/unknown", "", http.StatusUnauthorized}, // no token, no map of the endpoints
		{"/unknown", "s3cret", http.StatusNotFound},
		// Probes stay open: they reveal only liveness and the state name.
		{"/healthz", "", http.StatusOK},
		{"/readyz", "", http.StatusServiceUnavailable},
		{"/healthz", "wrong", http.StatusOK},
	}
	for _, c := range cases {
		a := call(t, http.DefaultClient, http.MethodGet, base+c.path, c.token)
		if a.status != c.status {
			t.Errorf("GET %s token %q = %d %q, want %d", c.path, c.token, a.status, a.raw, c.status)
		}
		if c.status == http.StatusUnauthorized {
			wantError(t, a, http.StatusUnauthorized, "unauthorized")
			if !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("GET %s: WWW-Authenticate = %q", c.path, a.header.Get("WWW-Authenticate"))
			}
		}
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Authorization", "Basic czNjcmV0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("Basic auth instead of Bearer = %d", resp.StatusCode)
	}
}

// selfSigned writes a fresh certificate for 127.0.0.1 and its key as PEM files.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "stoatflow-test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return certFile, keyFile, pool
}

func TestTLS(t *testing.T) {
	cert, key, pool := selfSigned(t)
	s, _ := startServer(t, HTTPOptions{TLSCert: cert, TLSKey: key, Token: "t"})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	if a := call(t, client, http.MethodGet, "https://"+s.Addr()+"/metrics", "t"); a.status != http.StatusOK {
		t.Errorf("GET /metrics over TLS = %d %q", a.status, a.raw)
	}
	if a := get(t, s, "/healthz"); a.status != http.StatusBadRequest {
		t.Errorf("plain HTTP to the TLS listener = %d, want 400", a.status)
	}
}

func TestNewHTTPServerRejectsBadOptions(t *testing.T) {
	cert, key, _ := selfSigned(t)
	state, m := NewStateMachine(nil), metrics.New()
	cases := []struct {
		name string
		opts HTTPOptions
		want string
	}{
		{"empty listen", HTTPOptions{}, "agent.http.listen"},
		{"cert without key", HTTPOptions{Listen: "127.0.0.1:0", TLSCert: cert}, "set together"},
		{"key without cert", HTTPOptions{Listen: "127.0.0.1:0", TLSKey: key}, "set together"},
		{"missing cert file", HTTPOptions{Listen: "127.0.0.1:0", TLSCert: cert + ".absent", TLSKey: key}, cert + ".absent"},
		{"key is not a key", HTTPOptions{Listen: "127.0.0.1:0", TLSCert: cert, TLSKey: cert}, "TLS key pair"},
	}
	for _, c := range cases {
		_, err := NewHTTPServer(c.opts, state, m, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
	if _, err := NewHTTPServer(HTTPOptions{Listen: "127.0.0.1:0"}, nil, m, nil); err == nil {
		t.Error("nil state machine accepted")
	}
}

func TestStartAndShutdown(t *testing.T) {
	s, err := NewHTTPServer(HTTPOptions{Listen: "127.0.0.1:0"}, NewStateMachine(nil), metrics.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown before start: %v", err)
	}
	if s.Addr() != "127.0.0.1:0" {
		t.Errorf("Addr before start = %q", s.Addr())
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	if strings.HasSuffix(addr, ":0") {
		t.Fatalf("Addr after start = %q, want the bound port", addr)
	}
	if err := s.Start(); err == nil {
		t.Error("second Start accepted")
	}
	busy, err := NewHTTPServer(HTTPOptions{Listen: addr}, NewStateMachine(nil), metrics.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := busy.Start(); err == nil || !strings.Contains(err.Error(), addr) {
		t.Errorf("Start on a busy port: err = %v", err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Error("server still answers after Shutdown")
	}
}
