package agent

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/agent/console"
	"github.com/stoatflow/stoatflow/metrics"
)

// HTTPOptions configure the agent's single HTTP listener (agent.http.* in the config).
type HTTPOptions struct {
	Listen string // host:port; the config defaults it to loopback
	Token  string // bearer token; empty means no authentication
	// TLSCert and TLSKey are PEM files; both set means HTTPS, neither means plain HTTP.
	TLSCert, TLSKey string
	// AllowedHosts are the host names (lower case, no port) accepted in the Host header
	// besides loopback names, IP addresses and the host of Listen.
	AllowedHosts []string
	// AllowUnauthenticated lets a listener beyond loopback serve without a token
	// (agent.http.allow.unauthenticated); MetricsUnauthenticated serves /metrics without it
	// (agent.http.metrics.unauthenticated).
	AllowUnauthenticated, MetricsUnauthenticated bool
}

// Connection timeouts. A request must arrive whole within readTimeout (a query body is
// small), so slow senders are cut off; answers other than queries must be written within
// writeTimeout. Queries replace both with their own deadline once their body is read.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = time.Minute
	// maxHeaderBytes bounds a request's headers (net/http's default is 1 MiB): a client
	// sending them slowly holds what it sent for readHeaderTimeout, so 600 such clients held
	// about 450 MiB. The agent's requests carry a Host, a token and a browser's usual headers.
	maxHeaderBytes = 64 << 10
)

// HTTPServer serves the operational endpoints (/healthz, /readyz, /metrics) and whatever
// other parts of the agent register through Handle. Every error it answers is JSON
// {"error": "...", "code": "..."}.
type HTTPServer struct {
	opts   HTTPOptions
	state  *StateMachine
	logger *slog.Logger
	mux    *http.ServeMux
	srv    *http.Server
	tls    *tls.Config

	hosts  []string // names accepted in the Host header besides loopback names and IPs
	origin *http.CrossOriginProtection

	mu       sync.Mutex
	listener net.Listener

	connsMu sync.Mutex
	conns   map[net.Conn]http.ConnState // every open connection but the idle ones
	closing bool                        // the shutdown began
	// restores, when set, is shown in /readyz's body while the stores are restored.
	restores *console.RestoreProgress
	// active, when set, names the application's active agent in /readyz's body.
	active func() (instance, host string)
	// activeHosts, when set, names the agents running active tasks in /readyz's body, where
	// several may (group.protocol = "streams").
	activeHosts func() []string
	// stall, when set, gives what processing waits on and since when (zero: nothing), for
	// /readyz's body.
	stall func() (on string, since time.Time)
}

// stallShown is how long processing must have waited on something for /readyz to say so.
const stallShown = time.Second

// openPaths answer without a token: probes (kubelet, load balancers, systemd helpers)
// rarely can carry one, and all they reveal is that the process is up and its state name.
// The console's files are open too (console.IsAsset): a browser cannot send a token to
// load a page; what the page reads needs one.
var openPaths = map[string]bool{"/healthz": true, "/readyz": true}

// NewHTTPServer checks the options and loads the TLS key pair, so a bad certificate is
// reported at startup rather than on the first connection. Nothing listens until Start.
func NewHTTPServer(opts HTTPOptions, state *StateMachine, m *metrics.Metrics, logger *slog.Logger) (*HTTPServer, error) {
	if opts.Listen == "" {
		return nil, errors.New("http: listen address is empty (agent.http.listen)")
	}
	if state == nil || m == nil {
		return nil, errors.New("http: a state machine and metrics are required")
	}
	if opts.Token == "" && !opts.AllowUnauthenticated && !config.LoopbackListen(opts.Listen) {
		return nil, fmt.Errorf("http: %s listens beyond loopback without a token: set agent.http.token.file or agent.http.token, "+
			"or agent.http.allow.unauthenticated = true to serve without one on purpose", opts.Listen)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &HTTPServer{opts: opts, state: state, logger: logger, mux: http.NewServeMux(),
		origin: http.NewCrossOriginProtection(), conns: map[net.Conn]http.ConnState{}}
	if host, _, err := net.SplitHostPort(opts.Listen); err == nil && host != "" {
		s.hosts = append(s.hosts, strings.TrimSuffix(strings.ToLower(host), "."))
	}
	s.hosts = append(s.hosts, opts.AllowedHosts...)

	switch {
	case opts.TLSCert != "" && opts.TLSKey != "":
		pair, err := config.LoadKeyPair(opts.TLSCert, opts.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("http: %w", err)
		}
		s.tls = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	case opts.TLSCert != "" || opts.TLSKey != "":
		return nil, errors.New("http: agent.http.tls.cert and agent.http.tls.key must be set together")
	}

	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "UP"})
	})
	s.mux.HandleFunc("GET /readyz", s.readyz)
	s.mux.Handle("GET /metrics", m.Handler())
	s.mux.HandleFunc(invalidTargetPath, serveInvalidTarget)

	s.srv = &http.Server{
		Handler:           s.guard(s.authenticate(http.HandlerFunc(s.route))),
		TLSConfig:         s.tls,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnState:         s.trackConn,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	s.srv.RegisterOnShutdown(s.cutReads)
	return s, nil
}

// trackConn keeps the connections that may hold a shutdown (the server closes idle ones
// itself), and once the shutdown began cuts those it reports after cutReads ran: the
// server may still accept a connection, or read a request on an idle one, meanwhile.
func (s *HTTPServer) trackConn(c net.Conn, st http.ConnState) {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	switch st {
	case http.StateNew, http.StateActive:
		if s.closing {
			cut(c, st)
			return
		}
		s.conns[c] = st
	default:
		delete(s.conns, c)
	}
}

// cutReads runs when shutdown begins, and cuts every connection but the idle ones.
func (s *HTTPServer) cutReads() {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	s.closing = true
	for c, st := range s.conns {
		cut(c, st)
	}
}

// cut ends what a connection waits for. One whose request has not arrived yet is closed;
// on any other, every read fails at once. A client sending its headers or body slowly
// cannot hold the shutdown, and running queries see their context cancelled.
func cut(c net.Conn, st http.ConnState) {
	if st == http.StateNew {
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Now())
}

// ReportRestore makes /readyz's body show the restoration of the stores while it runs.
func (s *HTTPServer) ReportRestore(p *console.RestoreProgress) { s.restores = p }

// ReportActive makes /readyz's body name the application's active agent.
func (s *HTTPServer) ReportActive(f func() (instance, host string)) { s.active = f }

// ReportActiveHosts makes /readyz's body name the agents running active tasks, by
// application.server, when there are several.
func (s *HTTPServer) ReportActiveHosts(f func() []string) { s.activeHosts = f }

// ReportStall makes /readyz's body say what processing has waited on for more than a
// second, and how long.
func (s *HTTPServer) ReportStall(f func() (on string, since time.Time)) { s.stall = f }

// stalled is what /readyz says of a wait.
type stalled struct {
	On      string  `json:"on"`
	Seconds float64 `json:"seconds"`
}

// OnShutdown registers f to run when Shutdown starts, for handlers that stream until told
// to stop (Shutdown waits for handlers to return).
func (s *HTTPServer) OnShutdown(f func()) { s.srv.RegisterOnShutdown(f) }

// Handle registers h for a Go 1.22 ServeMux pattern such as "GET /v1/stores/{store}". Like
// http.ServeMux it panics on a malformed or conflicting pattern: patterns are fixed in
// code, so that is a programming error caught by the first test that builds the server.
func (s *HTTPServer) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// Start binds the listener, so Addr is known when it returns (":0" picks a free port), and
// serves in the background until Shutdown.
func (s *HTTPServer) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener != nil {
		return errors.New("http: server already started")
	}
	ln, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return fmt.Errorf("http: listen on %s (agent.http.listen): %w", s.opts.Listen, err)
	}
	if s.tls == nil {
		ln = targetListener{ln}
	}
	s.listener = ln
	go func() {
		var err error
		if s.tls != nil {
			err = s.srv.ServeTLS(ln, "", "")
		} else {
			err = s.srv.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("http server stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	s.logger.Info("http server listening", "addr", ln.Addr().String(), "tls", s.tls != nil, "auth", s.opts.Token != "")
	if s.opts.Token == "" && !config.LoopbackListen(s.opts.Listen) {
		s.logger.Warn("the HTTP server answers anyone who reaches it without a token (agent.http.allow.unauthenticated = true): "+
			"every store, the live tap, the status and the metrics; only POST /v1/close and /-/reload stay for loopback callers. "+
			"Set agent.http.token.file to require a token", "addr", ln.Addr().String())
	}
	return nil
}

// Addr is the bound address once started, the configured one before.
func (s *HTTPServer) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return s.opts.Listen
	}
	return s.listener.Addr().String()
}

// Shutdown stops accepting connections and waits for in-flight requests until ctx ends.
func (s *HTTPServer) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	started := s.listener != nil
	s.mu.Unlock()
	if !started {
		return nil
	}
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("http: shutdown: %w", err)
	}
	return nil
}

func (s *HTTPServer) readyz(w http.ResponseWriter, _ *http.Request) {
	cur, reason := s.state.CurrentWithReason()
	status := http.StatusServiceUnavailable
	// A healthy standby is ready: a sidecar's readiness gates its pod, which also serves
	// the producing service, and the standby takes over on its own (docs/operations.md).
	if cur == StateRunning || cur == StateStandby {
		status = http.StatusOK
	}
	body := struct {
		State      string `json:"state"`
		Active     string `json:"active,omitempty"`
		ActiveHost string `json:"activeHost,omitempty"`
		// ActiveHosts are a streams group's agents running active tasks: Active and ActiveHost
		// name the one active agent of the classic mode, and keep their form for its clients.
		ActiveHosts []string               `json:"activeHosts,omitempty"`
		Reason      string                 `json:"reason,omitempty"`
		Restore     *console.RestoreStatus `json:"restore,omitempty"`
		Stalled     *stalled               `json:"stalled,omitempty"`
	}{State: cur.String(), Reason: reason}
	if s.active != nil {
		body.Active, body.ActiveHost = s.active()
	}
	if s.activeHosts != nil {
		body.ActiveHosts = s.activeHosts()
	}
	if s.stall != nil {
		if on, since := s.stall(); !since.IsZero() && time.Since(since) >= stallShown {
			body.Stalled = &stalled{On: on, Seconds: time.Since(since).Round(time.Millisecond).Seconds()}
		}
	}
	if s.restores != nil {
		body.Restore = s.restores.Status()
	}
	writeJSON(w, status, body)
}

// guard refuses what a web page could make a browser send (DESIGN §7): a Host header that
// names no host of this agent (DNS rebinding: a page whose name resolves to the agent's
// address could read the stores) and a cross-origin request that changes state (a form
// posted from another site). The probes (openPaths) are exempt, as they are from the token.
func (s *HTTPServer) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// No answer is to be read as another type than it says (a JSON error holding a
		// key that looks like HTML, a tap's text).
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if openPaths[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		if host, ok := s.hostAllowed(r.Host); !ok {
			writeHTTPError(w, http.StatusForbidden, "host_not_allowed", fmt.Sprintf(
				"Host %q names no host of this agent (a guard against DNS rebinding): add it to agent.http.allowed.hosts", host))
			return
		}
		if err := s.origin.Check(r); err != nil {
			writeHTTPError(w, http.StatusForbidden, "cross_origin", fmt.Sprintf(
				"%s %s from origin %q refused: requests that change state are accepted from same-origin callers only", r.Method, r.URL.Path, r.Header.Get("Origin")))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether the Host header names this agent: a loopback name, an IP
// address (DNS rebinding needs a name the attacker controls), the listen host or one of
// the allowed hosts. The port is not compared, so port forwarding keeps working. It also
// returns the host name it judged.
func (s *HTTPServer) hostAllowed(hostport string) (string, bool) {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return host, true
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return host, true
	}
	return host, slices.Contains(s.hosts, host)
}

// authenticate requires "Authorization: Bearer <token>" (the scheme in any case, RFC 6750)
// on every path but openPaths when a token is configured. It runs before routing, so
// without a token even unknown paths answer 401 and the set of endpoints is not revealed.
// Without a token configured, a request that changes state (POST /v1/close, /-/reload) is
// served to loopback callers only: with the listener beyond loopback (an opt-out), anyone
// who reaches the port could stop the agent.
func (s *HTTPServer) authenticate(next http.Handler) http.Handler {
	if s.opts.Token == "" {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s.changesState(r) && !loopbackPeer(r.RemoteAddr) {
				writeHTTPError(w, http.StatusForbidden, "token_required", fmt.Sprintf(
					"%s %s changes the agent's state: without agent.http.token.file (or agent.http.token) set, only loopback callers may send it", r.Method, r.URL.Path))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	want := []byte(s.opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if openPaths[r.URL.Path] || console.IsAsset(r.URL.Path) || (s.opts.MetricsUnauthenticated && r.URL.Path == "/metrics") {
			next.ServeHTTP(w, r)
			return
		}
		scheme, got, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		got = strings.TrimSpace(got)
		if !strings.EqualFold(scheme, "Bearer") || got == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="stoatflow"`)
			writeHTTPError(w, http.StatusUnauthorized, "unauthorized", "missing bearer token")
			return
		}
		if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="stoatflow", error="invalid_token"`)
			writeHTTPError(w, http.StatusUnauthorized, "unauthorized", "invalid bearer token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// changesState reports whether r may change the agent's state: a method other than GET,
// HEAD and OPTIONS on an endpoint that is not read-only (route refuses those without a
// JSON body for the same reason).
func (s *HTTPServer) changesState(r *http.Request) bool {
	if safeMethod(r.Method) {
		return false
	}
	_, pattern := s.mux.Handler(r)
	return pattern != "" && !readOnly[pattern]
}

// loopbackPeer reports whether a request's remote address (ip:port) is on this machine.
func loopbackPeer(remote string) bool {
	ap, err := netip.ParseAddrPort(remote)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// route serves through the mux, turning the mux's own plain-text 404 and 405 answers into
// JSON errors. The mux serves in both cases, since only its ServeHTTP sets the request's
// path values ({store}, {key}).
//
// A request that may change state (any method but GET, HEAD and OPTIONS, except the
// read-only POST /v2/query) to an endpoint must carry a JSON body type: a cross-site form
// can only send text/plain, urlencoded or multipart bodies, and a cross-site script sending
// JSON needs a CORS preflight, which the agent never grants. An IQv2 query changes nothing
// and its answer cannot be read cross-site, so clients that send its JSON body without
// the type (curl -d) are served; a foreign Origin is still refused for every POST.
func (s *HTTPServer) route(w http.ResponseWriter, r *http.Request) {
	_, pattern := s.mux.Handler(r)
	switch {
	case pattern == "":
		w = &muxErrorWriter{ResponseWriter: w, r: r}
	case !safeMethod(r.Method) && !readOnly[pattern] && !jsonBody(r):
		writeHTTPError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", fmt.Sprintf(
			"%s %s needs Content-Type: application/json (got %q)", r.Method, r.URL.Path, r.Header.Get("Content-Type")))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// readOnly lists the POST endpoints that only read (the answer to an invalid request
// target, whatever its method, is only a 400).
var readOnly = map[string]bool{"POST /v2/query": true, invalidTargetPath: true}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

func jsonBody(r *http.Request) bool {
	t, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && t == "application/json"
}

// muxErrorWriter wraps the mux's internal handlers (not found, method not allowed,
// redirects), replacing the error bodies and passing everything else through.
type muxErrorWriter struct {
	http.ResponseWriter
	r        *http.Request
	replaced bool
}

func (w *muxErrorWriter) WriteHeader(status int) {
	switch status {
	case http.StatusNotFound:
		w.replaced = true
		writeHTTPError(w.ResponseWriter, status, "not_found", "no endpoint "+w.r.URL.Path)
	case http.StatusMethodNotAllowed:
		w.replaced = true
		writeHTTPError(w.ResponseWriter, status, "method_not_allowed",
			fmt.Sprintf("method %s not allowed on %s (allowed: %s)", w.r.Method, w.r.URL.Path, w.Header().Get("Allow")))
	default:
		w.ResponseWriter.WriteHeader(status)
	}
}

func (w *muxErrorWriter) Write(b []byte) (int, error) {
	if w.replaced {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// writeHTTPError answers {"error": msg, "code": code}; code is a stable snake_case word a
// client can switch on, msg is for people.
func writeHTTPError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]string{"error": msg, "code": code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":"encoding the response failed","code":"internal"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// A write error means the client went away; there is no one left to tell.
	_, _ = w.Write(append(body, '\n'))
}
