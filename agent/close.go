package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
)

// Group membership on close (Kafka Streams' CloseOptions.GroupMembershipOperation, KIP-1092).
const (
	closeDefault       = "DEFAULT"         // agent.leave.group.on.close decides (default: stay)
	closeLeaveGroup    = "LEAVE_GROUP"     // leave the group: partitions move at once
	closeRemainInGroup = "REMAIN_IN_GROUP" // stay: a restart within session.timeout.ms takes them back
)

// closer carries a close request (a signal, or POST /v1/close) to Run.
type closer struct {
	once sync.Once
	done chan struct{}
	mu   sync.Mutex
	op   string
}

func newCloser() *closer { return &closer{done: make(chan struct{}), op: closeDefault} }

// request asks the agent to close with the given membership operation; the first request wins.
func (c *closer) request(op string) {
	c.once.Do(func() {
		c.mu.Lock()
		c.op = op
		c.mu.Unlock()
		close(c.done)
	})
}

// leaveGroup resolves the membership operation against the config's default.
func (c *closer) leaveGroup(configured bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.op {
	case closeLeaveGroup:
		return true
	case closeRemainInGroup:
		return false
	}
	return configured
}

// context is ctx, also cancelled by a close request.
func (c *closer) context(ctx context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-c.done:
			cancel()
		case <-out.Done():
		}
	}()
	return out, cancel
}

// serveClose adds POST /v1/close: body {"operation": "DEFAULT"|"LEAVE_GROUP"|"REMAIN_IN_GROUP"}
// (empty body: DEFAULT). The agent answers 202 and shuts down as on SIGTERM.
func (a *Agent) serveClose() {
	a.http.Handle("POST /v1/close", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Operation string `json:"operation"`
		}
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&body); err != nil && !errors.Is(err, io.EOF) {
			writeHTTPError(w, http.StatusBadRequest, "bad_request", "body: "+err.Error())
			return
		}
		op := body.Operation
		switch op {
		case "":
			op = closeDefault
		case closeDefault, closeLeaveGroup, closeRemainInGroup:
		default:
			writeHTTPError(w, http.StatusBadRequest, "bad_request",
				`operation must be "DEFAULT", "LEAVE_GROUP" or "REMAIN_IN_GROUP", not "`+op+`"`)
			return
		}
		a.log.Info("close requested over HTTP", "operation", op)
		a.closer.request(op)
		writeJSON(w, http.StatusAccepted, map[string]string{"state": StatePendingShutdown.String(), "operation": op})
	}))
}
