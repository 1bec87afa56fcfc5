// Package console is the agent's operator console: the page at GET /ui (served from the
// binary), GET /v1/status that it and `stoatflow top` read, and the live tap of the records
// leaving a node, GET /v1/tap/{node}, that it and `stoatflow tap` read. docs/http.md
// documents the endpoints, docs/console.md the page.
package console

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stoatflow/stoatflow/luart/suggest"
	"github.com/stoatflow/stoatflow/metrics"
)

// Sources are what the console reads from the running agent. The funcs are called from
// HTTP handlers, concurrently.
type Sources struct {
	Metrics *metrics.Metrics
	State   func() string
	// Nodes are the names of the running topology's nodes.
	Nodes func() []string
	// Time is the engine's time as the processing loop last published it, nil before.
	Time func() *TimeStatus
	// Tasks says which worker runs each task, by task id; nil before the first assignment.
	Tasks func() map[string]int
	// Assignment says which agent runs each task of the application; nil before the
	// topology is built.
	Assignment func() *Assignment
	// StoreSizes are the approximate sizes of the stores on disk, by name.
	StoreSizes          func() map[string]int64
	UncommittedMaxBytes int64
	Restore             *RestoreProgress
	Log                 *RecentLog
	Taps                *Taps
	// WriteJSON and WriteError answer as every endpoint of the agent does.
	WriteJSON  func(w http.ResponseWriter, status int, v any)
	WriteError func(w http.ResponseWriter, status int, code, msg string)
}

// Server serves the console's endpoints.
type Server struct {
	src  Sources
	stop chan struct{}
	once sync.Once
}

// NewServer serves what src provides.
func NewServer(src Sources) *Server { return &Server{src: src, stop: make(chan struct{})} }

// Register adds the endpoints through handle (the agent's HTTPServer.Handle).
func (s *Server) Register(handle func(pattern string, h http.Handler)) {
	ui, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(ui)
	handle("GET /ui", page(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, ui, "index.html")
	})))
	handle("GET /ui/", page(http.StripPrefix("/ui/", files)))
	handle("GET /v1/status", s.noParams(func(w http.ResponseWriter, _ *http.Request) {
		s.src.WriteJSON(w, http.StatusOK, s.status())
	}))
	handle("GET /v1/tap/{node}", s.noParams(s.tap))
}

//go:embed ui
var uiFiles embed.FS

// IsAsset reports whether path is one of the page's files. They are the same bytes in every
// agent and reveal nothing about the application, so they need no token: a browser cannot
// send one to load a page. Everything the page reads does.
func IsAsset(path string) bool { return path == "/ui" || strings.HasPrefix(path, "/ui/") }

// ContentSecurityPolicy is sent with the page's files: scripts and styles only from the
// agent (no inline code, no eval), no connections elsewhere, no framing.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func page(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}

// noParams refuses query parameters: a typo would otherwise be ignored silently.
func (s *Server) noParams(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for name := range r.URL.Query() {
			s.src.WriteError(w, http.StatusBadRequest, "bad_parameter", fmt.Sprintf("unknown parameter %q (known: none)", name))
			return
		}
		h(w, r)
	})
}

// Close ends the taps in progress: the agent calls it when its HTTP server shuts down,
// which waits for handlers and so would wait for a tap forever.
func (s *Server) Close() { s.once.Do(func() { close(s.stop) }) }

// tapWriteTimeout bounds each write of a tap: a client that stops reading is dropped
// instead of holding the handler. It replaces the server's write timeout, which a stream
// that lasts as long as someone watches cannot have.
const tapWriteTimeout = 10 * time.Second

// tapKeepAlive is how often an idle tap sends a comment, so that a client or proxy sees
// the stream alive and a client gone away is noticed.
const tapKeepAlive = 15 * time.Second

// tap streams the records leaving a node as server-sent events (text/event-stream): an
// event "record" per record shown, "skipped" for records skipped while none was shown, an
// event "lost" when the client fell behind.
func (s *Server) tap(w http.ResponseWriter, r *http.Request) {
	node := r.PathValue("node")
	if nodes := s.src.Nodes(); !slices.Contains(nodes, node) {
		msg := fmt.Sprintf("no node named %q in the running topology (GET /topology lists them)", node)
		if best, ok := suggest.Closest(node, nodes); ok {
			msg += fmt.Sprintf("; did you mean %q?", best)
		}
		s.src.WriteError(w, http.StatusNotFound, "unknown_node", msg)
		return
	}
	sub, err := s.src.Taps.Subscribe(node)
	if errors.Is(err, ErrTooManyTaps) {
		w.Header().Set("Retry-After", "5")
		s.src.WriteError(w, http.StatusServiceUnavailable, "too_many_taps",
			fmt.Sprintf("%d taps are open, the most agent.http.tap.max.clients allows", s.src.Taps.maxClients))
		return
	}
	defer s.src.Taps.Unsubscribe(sub)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	rc := http.NewResponseController(w)
	// Each write has its own deadline instead of the server's write timeout, which would
	// end the stream (TestTapOutlivesTheServerTimeouts).
	send := func(b []byte) bool {
		if err := rc.SetWriteDeadline(time.Now().Add(tapWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send(fmt.Appendf(nil, ": tapping %s, at most %d records per second\n\n", node, s.src.Taps.Rate())) {
		return
	}
	keepAlive := time.NewTicker(tapKeepAlive)
	defer keepAlive.Stop()
	for {
		var msg []byte
		select {
		case <-r.Context().Done():
			return
		case <-s.stop:
			return
		case <-keepAlive.C:
			msg = []byte(": keep-alive\n\n")
		case ev := <-sub.Events:
			if lost := sub.Lost(); lost > 0 {
				lostEv, _ := json.Marshal(map[string]int64{"lost": lost})
				msg = fmt.Appendf(msg, "event: lost\ndata: %s\n\n", lostEv)
			}
			msg = fmt.Appendf(msg, "event: %s\ndata: %s\n\n", ev.Event, ev.Data)
		}
		if !send(msg) {
			return
		}
	}
}
