package agent

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/agent/console"
	"github.com/stoatflow/stoatflow/agent/internal/webtest"
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
	if !strings.Contains(a.raw, "stoatflow_processor_records_dropped_total{node=\"\",reason=\"processing\"} 0") {
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

// send does one request with the given headers (Host is the request's Host) and body.
func send(t *testing.T, method, url string, headers map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &a.body)
	return a
}

// TestCrossSiteRequestsRefused: a web page can make a browser post a form (text/plain,
// urlencoded, multipart) or a body-less fetch to any address, with its own Origin. None of
// them may close or reload the agent.
func TestCrossSiteRequestsRefused(t *testing.T) {
	a, err := New(testConfig(t, []string{"127.0.0.1:1"}, "return nil", ""), Options{})
	if err != nil {
		t.Fatal(err)
	}
	a.serveClose()
	a.serveReload()
	if err := a.http.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.http.Shutdown(context.Background()) })
	base := "http://" + a.http.Addr()
	same := "http://" + a.http.Addr()
	for _, path := range []string{"/v1/close", "/-/reload"} {
		for _, c := range []struct {
			name    string
			headers map[string]string
			body    string
			status  int
			code    string
		}{
			{"cross-site text/plain form", map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, `{"operation":"LEAVE_GROUP"}`, 403, "cross_origin"},
			{"cross-site urlencoded form", map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, "a=b", 403, "cross_origin"},
			{"cross-site JSON", map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, "{}", 403, "cross_origin"},
			{"same-site but another origin", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"}, "{}", 403, "cross_origin"},
			{"sandboxed page", map[string]string{"Content-Type": "application/json", "Origin": "null"}, "{}", 403, "cross_origin"},
			{"text/plain without an Origin", map[string]string{"Content-Type": "text/plain"}, "{}", 415, "unsupported_media_type"},
			{"multipart", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, "--x--", 415, "unsupported_media_type"},
			{"no body, no type", nil, "", 415, "unsupported_media_type"},
		} {
			wantError(t, send(t, http.MethodPost, base+path, c.headers, c.body), c.status, c.code)
		}
	}
	select {
	case <-a.closer.done:
		t.Fatal("a refused request closed the agent")
	default:
	}
	// The agent's own clients: JSON, with no Origin or the agent's own.
	if a := send(t, http.MethodPost, base+"/-/reload", map[string]string{"Content-Type": "application/json; charset=utf-8", "Origin": same}, ""); a.status != 503 || a.body["code"] != "not_ready" {
		t.Errorf("same-origin reload = %d %s, want the reload to be tried (503 not_ready before Run)", a.status, a.raw)
	}
	if a := send(t, http.MethodPost, base+"/v1/close", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-origin"}, `{"operation":"LEAVE_GROUP"}`); a.status != 202 {
		t.Errorf("same-origin close = %d %s", a.status, a.raw)
	}
	select {
	case <-a.closer.done:
	default:
		t.Fatal("an accepted close did not close the agent")
	}
}

// TestHostHeaderChecked: a page whose name the attacker points at 127.0.0.1 (DNS
// rebinding) reaches the agent as same-origin, with its own name in Host.
func TestHostHeaderChecked(t *testing.T) {
	s, _ := startServer(t, HTTPOptions{AllowedHosts: []string{"stoatflow.default.svc"}})
	base := "http://" + s.Addr()
	for host, ok := range map[string]bool{
		"evil.example:9464":           false,
		"evil.example":                false,
		"127.0.0.1.evil.example":      false,
		"localhost.evil.example:9464": false,
		"stoatflow.default.svc.evil":  false,
		s.Addr():                      true,
		"localhost:9464":              true,
		"LocalHost.:9464":             true,
		"grafana.localhost":           true,
		"[::1]:9464":                  true,
		"192.0.2.7:9464":              true, // an address: not rebindable, e.g. the pod IP
		"[2001:db8::7]":               true,
		"stoatflow.default.svc:9464":  true,
		"StoatFlow.Default.Svc":       true,
	} {
		a := send(t, http.MethodGet, base+"/metrics", map[string]string{"Host": host}, "")
		switch {
		case ok && a.status != http.StatusOK:
			t.Errorf("Host %q = %d %s, want 200", host, a.status, a.raw)
		case !ok:
			wantError(t, a, http.StatusForbidden, "host_not_allowed")
		}
	}
	// Probes answer whatever the Host: they reveal nothing, and load balancers send odd ones.
	if a := send(t, http.MethodGet, base+"/healthz", map[string]string{"Host": "evil.example"}, ""); a.status != http.StatusOK {
		t.Errorf("/healthz with a foreign Host = %d", a.status)
	}

	named, err := NewHTTPServer(HTTPOptions{Listen: "Stoat-1.example.:9464", Token: "t"}, NewStateMachine(nil), metrics.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := named.hostAllowed("stoat-1.example:9464"); !ok {
		t.Error("the listen host is refused")
	}

	cfg := testConfig(t, []string{"127.0.0.1:1"}, "return nil", `application.server = "stoat-2.example:9464"`)
	cfg.HTTPAllowedHosts = []string{"stoatflow.default.svc"}
	ag, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{"stoat-2.example:80": true, "stoatflow.default.svc": true, "stoat-3.example": false} {
		if _, ok := ag.http.hostAllowed(host); ok != want {
			t.Errorf("agent: Host %q allowed = %t, want %t", host, ok, want)
		}
	}
}

func TestBearerSchemeIsCaseInsensitive(t *testing.T) {
	s, _ := startServer(t, HTTPOptions{Token: "s3cret"})
	base := "http://" + s.Addr()
	for auth, status := range map[string]int{
		"Bearer s3cret":   200,
		"bearer s3cret":   200,
		"BEARER s3cret":   200,
		"Bearer   s3cret": 200,
		"Bearer":          401,
		"Bearer ":         401,
		"Bearers3cret":    401,
		"Basic s3cret":    401,
		"bearer wrong":    401,
	} {
		if a := send(t, http.MethodGet, base+"/metrics", map[string]string{"Authorization": auth}, ""); a.status != status {
			t.Errorf("Authorization %q = %d %s, want %d", auth, a.status, a.raw, status)
		}
	}
}

const slowBody = "POST /slow HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"

// slowServer is a server with an endpoint that reads its whole body.
func slowServer(t *testing.T) *HTTPServer {
	t.Helper()
	s, err := NewHTTPServer(HTTPOptions{Listen: "127.0.0.1:0"}, NewStateMachine(nil), metrics.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Handle("POST /slow", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			writeHTTPError(w, http.StatusRequestTimeout, "request_timeout", err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "read"})
	}))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// activeConns is the number of connections whose request is being served.
func (s *HTTPServer) activeConns() int {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	n := 0
	for _, st := range s.conns {
		if st == http.StateActive {
			n++
		}
	}
	return n
}

// TestSlowClientsAreCutOff: 300 clients that send a body byte by byte never finish; each
// must be disconnected once the request had readTimeout to arrive.
func TestSlowClientsAreCutOff(t *testing.T) {
	t.Parallel()
	s := slowServer(t)
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	const n = 300
	start := time.Now()
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = webtest.SlowClient(t, s.Addr(), slowBody)
	}
	errs := make(chan error, n)
	for _, c := range conns {
		go func() {
			// The server closes the connection: io.ReadAll ends. The deadline is the test's
			// limit, far past the server's timeout.
			_ = c.SetReadDeadline(time.Now().Add(readTimeout + 20*time.Second))
			_, err := io.ReadAll(c)
			errs <- err
		}()
	}
	for range conns {
		if err := <-errs; err != nil {
			t.Fatalf("a slow client was not cut off: %v", err)
		}
	}
	t.Logf("%d slow clients cut off after %v (read timeout %v)", n, time.Since(start).Round(time.Millisecond), readTimeout)
}

// TestLargeHeadersAreRefused: headers past maxHeaderBytes get 431, so a client cannot make
// its connection hold a megabyte of them; headers of an ordinary size are served.
func TestLargeHeadersAreRefused(t *testing.T) {
	s, _ := startServer(t, HTTPOptions{})
	send := func(pad int) answer {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+s.Addr()+"/healthz", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Pad", strings.Repeat("a", pad))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return answer{status: resp.StatusCode, raw: string(raw)}
	}
	if a := send(8 << 10); a.status != http.StatusOK {
		t.Errorf("8 KiB of headers: %d %s, want 200", a.status, a.raw)
	}
	if a := send(2 * maxHeaderBytes); a.status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("%d KiB of headers: %d %s, want 431", 2*maxHeaderBytes>>10, a.status, a.raw)
	}
}

// TestShutdownIsNotHeldBySlowClients: clients in the middle of sending their headers or
// their body are dropped when shutdown begins, instead of holding it until they time out.
func TestShutdownIsNotHeldBySlowClients(t *testing.T) {
	s := slowServer(t)
	const bodies, headers = 300, 20
	for range bodies {
		webtest.SlowClient(t, s.Addr(), slowBody)
	}
	for range headers {
		webtest.SlowClient(t, s.Addr(), "GET /metrics HTTP/1.1\r\nHost: localhost\r\n")
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.activeConns() < bodies {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d slow bodies being read", s.activeConns(), bodies)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Half the read timeout: without the cut the clients would hold the shutdown past it.
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout/2)
	defer cancel()
	start := time.Now()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown held by slow clients: %v", err)
	}
	t.Logf("shutdown with %d slow bodies and %d slow headers took %v", bodies, headers, time.Since(start).Round(time.Millisecond))
}

// TestReadOnlyQueryNeedsNoJSONType: POST /v2/query only reads, so a client that sends its
// JSON body without the type (curl -d) is served; a foreign Origin is still refused.
func TestReadOnlyQueryNeedsNoJSONType(t *testing.T) {
	s, _ := startServer(t, HTTPOptions{})
	s.Handle("POST /v2/query", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	base := "http://" + s.Addr()
	for _, typ := range []string{"", "application/x-www-form-urlencoded", "application/json"} {
		h := map[string]string{}
		if typ != "" {
			h["Content-Type"] = typ
		}
		if a := send(t, http.MethodPost, base+"/v2/query", h, `{"store":"s"}`); a.status != http.StatusOK {
			t.Errorf("POST /v2/query with Content-Type %q = %d %s, want 200", typ, a.status, a.raw)
		}
	}
	wantError(t, send(t, http.MethodPost, base+"/v2/query",
		map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, "{}"), 403, "cross_origin")
}

// While the stores are restored, /readyz's body says how far the restore is.
func TestReadyzShowsRestoreProgress(t *testing.T) {
	s, _ := startServer(t, HTTPOptions{})
	var p console.RestoreProgress
	s.ReportRestore(&p)
	if a := get(t, s, "/readyz"); a.raw != `{"state":"CREATED"}`+"\n" {
		t.Fatalf("/readyz before a restore = %q", a.raw)
	}
	end := p.Begin(100, slog.New(slog.DiscardHandler), time.Hour)
	p.At("word-counts", 1)
	p.Advance(40, 50)
	resp, err := http.Get("http://" + s.Addr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	end()
	for _, want := range []string{`"state":"CREATED"`, `"restore":{"store":"word-counts","partition":1,"records":40,"offsets":50,"totalOffsets":100,`, `"etaSeconds":`} {
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(raw), want) {
			t.Fatalf("/readyz while restoring = %d %q, want it to contain %q", resp.StatusCode, raw, want)
		}
	}
}

// With a token, the console's files answer without it (a browser cannot send one to load a
// page); what the page reads does not.
func TestConsoleFilesNeedNoTokenTheirDataDoes(t *testing.T) {
	s, _ := startServer(t, HTTPOptions{Token: "t0ken"})
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	s.Handle("GET /ui", ok)
	s.Handle("GET /ui/", ok)
	s.Handle("GET /v1/status", ok)
	s.Handle("GET /v1/tap/{node}", ok)
	for path, want := range map[string]int{"/ui": 200, "/ui/app.js": 200, "/v1/status": 401, "/v1/tap/x": 401, "/uix": 401} {
		if a := get(t, s, path); a.status != want {
			t.Errorf("GET %s without the token = %d, want %d", path, a.status, want)
		}
	}
}

// A listener beyond loopback without a token is refused unless the operator opted out; on
// loopback it is not.
func TestListenBeyondLoopbackNeedsAToken(t *testing.T) {
	state, m := NewStateMachine(nil), metrics.New()
	for _, listen := range []string{"0.0.0.0:0", "[::]:0", ":0", "192.0.2.1:0", "stoat.example:0"} {
		_, err := NewHTTPServer(HTTPOptions{Listen: listen}, state, m, nil)
		if err == nil || !strings.Contains(err.Error(), "listens beyond loopback without a token") ||
			!strings.Contains(err.Error(), "agent.http.token.file") || !strings.Contains(err.Error(), "agent.http.allow.unauthenticated = true") {
			t.Errorf("%s without a token: %v", listen, err)
		}
		if _, err := NewHTTPServer(HTTPOptions{Listen: listen, Token: "t"}, state, m, nil); err != nil {
			t.Errorf("%s with a token: %v", listen, err)
		}
		if _, err := NewHTTPServer(HTTPOptions{Listen: listen, AllowUnauthenticated: true}, state, m, nil); err != nil {
			t.Errorf("%s opted out: %v", listen, err)
		}
	}
	for _, listen := range []string{"127.0.0.1:0", "[::1]:0", "localhost:0", "127.0.0.2:0"} {
		if _, err := NewHTTPServer(HTTPOptions{Listen: listen}, state, m, nil); err != nil {
			t.Errorf("%s: %v", listen, err)
		}
	}
	var logs strings.Builder
	s, err := NewHTTPServer(HTTPOptions{Listen: "0.0.0.0:0", AllowUnauthenticated: true}, state, m,
		slog.New(slog.NewTextHandler(&lockedWriter{w: &logs}, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(t.Context())
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "answers anyone who reaches it without a token") {
		t.Errorf("no warning at start:\n%s", logs.String())
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Without a token, what changes the agent's state is served to loopback callers only,
// whatever the listener; what only reads is served to anyone the listener lets in. With
// http.metrics.unauthenticated, /metrics needs no token while the rest does.
func TestStateChangesNeedTheTokenOffLoopback(t *testing.T) {
	serve := func(opts HTTPOptions, method, path, remote, token string) *httptest.ResponseRecorder {
		t.Helper()
		s, err := NewHTTPServer(opts, NewStateMachine(nil), metrics.New(), nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Handle("POST /v1/close", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusAccepted, "closing") }))
		s.Handle("GET /v1/stores", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, []string{}) }))
		s.Handle("POST /v2/query", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, []string{}) }))
		req := httptest.NewRequest(method, "http://192.0.2.7:9464"+path, strings.NewReader("{}"))
		req.RemoteAddr = remote
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		s.srv.Handler.ServeHTTP(rec, req)
		return rec
	}
	open := HTTPOptions{Listen: "0.0.0.0:9464", AllowUnauthenticated: true}
	cases := []struct {
		opts               HTTPOptions
		method, path, peer string
		token              string
		status             int
		code               string
	}{
		{open, http.MethodPost, "/v1/close", "192.0.2.9:5000", "", http.StatusForbidden, "token_required"},
		{open, http.MethodPost, "/v1/close", "[2001:db8::9]:5000", "", http.StatusForbidden, "token_required"},
		{open, http.MethodPost, "/v1/close", "127.0.0.1:5000", "", http.StatusAccepted, ""},
		{open, http.MethodPost, "/v1/close", "[::1]:5000", "", http.StatusAccepted, ""},
		{open, http.MethodGet, "/v1/stores", "192.0.2.9:5000", "", http.StatusOK, ""},
		{open, http.MethodPost, "/v2/query", "192.0.2.9:5000", "", http.StatusOK, ""},
		{open, http.MethodGet, "/metrics", "192.0.2.9:5000", "", http.StatusOK, ""},
		{HTTPOptions{Listen: "0.0.0.0:9464", Token: "t"}, http.MethodPost, "/v1/close", "192.0.2.9:5000", "t", http.StatusAccepted, ""},
		{HTTPOptions{Listen: "0.0.0.0:9464", Token: "t"}, http.MethodPost, "/v1/close", "127.0.0.1:5000", "", http.StatusUnauthorized, "unauthorized"},
		{HTTPOptions{Listen: "0.0.0.0:9464", Token: "t"}, http.MethodGet, "/metrics", "192.0.2.9:5000", "", http.StatusUnauthorized, "unauthorized"},
		{HTTPOptions{Listen: "0.0.0.0:9464", Token: "t", MetricsUnauthenticated: true}, http.MethodGet, "/metrics", "192.0.2.9:5000", "", http.StatusOK, ""},
		{HTTPOptions{Listen: "0.0.0.0:9464", Token: "t", MetricsUnauthenticated: true}, http.MethodGet, "/v1/stores", "192.0.2.9:5000", "", http.StatusUnauthorized, "unauthorized"},
	}
	for _, c := range cases {
		rec := serve(c.opts, c.method, c.path, c.peer, c.token)
		if rec.Code != c.status || (c.code != "" && !strings.Contains(rec.Body.String(), `"code":"`+c.code+`"`)) {
			t.Errorf("%s %s from %s (token %q, opts %+v) = %d %s, want %d %s", c.method, c.path, c.peer, c.token, c.opts, rec.Code, rec.Body, c.status, c.code)
		}
	}
}

// A request target that is not a valid URI (a key with a bad escape) is answered as JSON like
// every other error, on a fresh connection and on one that carried requests with bodies
// before; answers carry X-Content-Type-Options: nosniff.
func TestInvalidRequestTargetIsJSON(t *testing.T) {
	s, _ := startServer(t, HTTPOptions{})
	s.Handle("POST /v2/query", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		writeJSON(w, http.StatusOK, map[string]string{"body": string(body)})
	}))
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rd := bufio.NewReader(conn)
	body := "{\"a\":\n\"GET /x%zz HTTP/1.1\"}"
	requests := "GET /v1/stores/cnt/keys/%zz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" +
		"POST /v2/query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body +
		"GET /v1/stores/cnt/keys/a%2 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" +
		"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	if _, err := io.WriteString(conn, requests); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		status int
		body   string
	}{
		{400, `{"code":"bad_request","error":"the request target \"/v1/stores/cnt/keys/%zz\" is not a valid URI: invalid URL escape \"%zz\" (escape % as %25 in a key)"}`},
		{200, `{"body":` + strconvQuote(body) + `}`},
		{400, `"code":"bad_request"`},
		{200, `{"status":"UP"}`},
	}
	for i, w := range want {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != w.status || !strings.Contains(string(got), w.body) || resp.Header.Get("Content-Type") != "application/json" ||
			resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("answer %d: %d %s %v, want %d %s", i, resp.StatusCode, got, resp.Header, w.status, w.body)
		}
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
