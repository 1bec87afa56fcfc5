package console

import (
	"context"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"
)

// LogEntry is one warning or error the agent logged.
type LogEntry struct {
	Time    time.Time         `json:"time"`
	Level   string            `json:"level"`
	Message string            `json:"message"`
	Attrs   map[string]string `json:"attrs,omitempty"`
}

// maxLogValue bounds each attribute kept: an error can carry a whole Lua traceback.
const maxLogValue = 1024

// RecentLog is a slog.Handler that passes every record on to the agent's handler and keeps
// the last warnings and errors, for the console. Warnings are kept even when the agent's
// log level hides them.
type RecentLog struct {
	next   slog.Handler
	ring   *logRing
	attrs  []slog.Attr
	prefix string // the open groups, "a.b."
}

type logRing struct {
	mu      sync.Mutex
	entries []LogEntry
	next    int
	full    bool
}

// NewRecentLog wraps next, keeping the last keep warnings and errors.
func NewRecentLog(next slog.Handler, keep int) *RecentLog {
	return &RecentLog{next: next, ring: &logRing{entries: make([]LogEntry, max(keep, 1))}}
}

// Recent returns the kept entries, oldest first; never nil, so that JSON shows [].
func (h *RecentLog) Recent() []LogEntry {
	r := h.ring
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]LogEntry{}, r.entries[:r.next]...)
	}
	return append(append([]LogEntry{}, r.entries[r.next:]...), r.entries[:r.next]...)
}

func (h *RecentLog) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.next.Enabled(ctx, l)
}

func (h *RecentLog) Handle(ctx context.Context, rec slog.Record) error {
	if rec.Level >= slog.LevelWarn {
		e := LogEntry{Time: rec.Time, Level: rec.Level.String(), Message: clip(rec.Message), Attrs: map[string]string{}}
		for _, a := range h.attrs {
			addAttr(e.Attrs, "", a)
		}
		rec.Attrs(func(a slog.Attr) bool { addAttr(e.Attrs, h.prefix, a); return true })
		r := h.ring
		r.mu.Lock()
		r.entries[r.next] = e
		r.next = (r.next + 1) % len(r.entries)
		r.full = r.full || r.next == 0
		r.mu.Unlock()
	}
	if !h.next.Enabled(ctx, rec.Level) {
		return nil
	}
	return h.next.Handle(ctx, rec)
}

func (h *RecentLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(attrs)
	c.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range attrs {
		c.attrs = append(c.attrs, slog.Attr{Key: h.prefix + a.Key, Value: a.Value})
	}
	return &c
}

func (h *RecentLog) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.next = h.next.WithGroup(name)
	c.prefix = h.prefix + name + "."
	return &c
}

func addAttr(to map[string]string, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		for _, g := range v.Group() {
			addAttr(to, prefix+a.Key+".", g)
		}
		return
	}
	if a.Key != "" {
		to[prefix+a.Key] = clip(v.String())
	}
}

func clip(s string) string {
	if len(s) <= maxLogValue {
		return s
	}
	cut := maxLogValue
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
