package agent

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Go's HTTP server answers a request whose target is not a valid URI (a key written with a
// bad escape, GET /v1/stores/s/keys/%zz) itself, as plain text, before any handler: every
// other error of the agent is JSON. targetListener hands the server each such request with
// its target replaced by invalidTargetPath and the original in the query, so that a handler
// answers it as JSON. It reads HTTP/1.1 framing as far as it must to find each request line
// (Content-Length bodies); on anything else (a chunked body, a line too long) it stops
// looking and passes the rest of that connection through untouched. Plain HTTP only: under
// TLS the bytes it would need are encrypted, and Go's answer stays.
type targetListener struct{ net.Listener }

func (l targetListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &targetConn{Conn: c}, nil
}

// invalidTargetPath receives the requests whose target was not a valid URI; the target is in
// its query parameter t.
const invalidTargetPath = "/-/invalid-request-target"

type targetState int

const (
	atRequestLine targetState = iota
	inHeaders
	inBody
	passThrough
)

type targetConn struct {
	net.Conn
	state   targetState
	line    []byte // the line being read
	out     []byte // bytes ready for the server
	body    int64  // bytes of the current body still to pass
	length  int64  // Content-Length of the current request
	chunked bool
	buf     [4096]byte
}

func (c *targetConn) Read(p []byte) (int, error) {
	for len(c.out) == 0 {
		if c.state == passThrough {
			return c.Conn.Read(p)
		}
		n, err := c.Conn.Read(c.buf[:])
		c.feed(c.buf[:n])
		if err != nil && len(c.out) == 0 {
			if len(c.line) > 0 { // a partial line: the server sees it and the error
				c.out, c.line = c.line, nil
				break
			}
			return 0, err
		}
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

func (c *targetConn) feed(b []byte) {
	for len(b) > 0 {
		switch c.state {
		case passThrough:
			c.out = append(c.out, b...)
			return
		case inBody:
			n := min(int64(len(b)), c.body)
			c.out = append(c.out, b[:n]...)
			b, c.body = b[n:], c.body-n
			if c.body == 0 {
				c.state = atRequestLine
			}
			continue
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			c.line = append(c.line, b...)
			if len(c.line) > maxHeaderBytes {
				c.out, c.line, c.state = append(c.out, c.line...), nil, passThrough
			}
			return
		}
		c.line = append(c.line, b[:i+1]...)
		b = b[i+1:]
		c.endLine()
	}
}

// endLine handles the line in c.line, which ends with "\n".
func (c *targetConn) endLine() {
	line := c.line
	c.line = nil
	blank := len(bytes.TrimRight(line, "\r\n")) == 0
	switch {
	case c.state == atRequestLine && blank: // Go skips empty lines before a request
		c.out = append(c.out, line...)
	case c.state == atRequestLine:
		c.out = append(c.out, rewriteTarget(line)...)
		c.state, c.length, c.chunked = inHeaders, 0, false
	case blank:
		c.out = append(c.out, line...)
		switch {
		case c.chunked || c.length < 0:
			c.state = passThrough
		case c.length > 0:
			c.state, c.body = inBody, c.length
		default:
			c.state = atRequestLine
		}
	default:
		name, value, _ := strings.Cut(string(line), ":")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "content-length":
			n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			if err != nil || n < 0 {
				n = -1 // the server refuses it; nothing after it can be framed
			}
			c.length = n
		case "transfer-encoding":
			c.chunked = true
		}
		c.out = append(c.out, line...)
	}
}

// rewriteTarget returns a request line ("GET /path HTTP/1.1\r\n") as it is when its target
// is a valid URI, else with the target moved into invalidTargetPath's query.
func rewriteTarget(line []byte) []byte {
	method, rest, ok1 := strings.Cut(string(line), " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || !strings.HasPrefix(proto, "HTTP/1.") {
		return line
	}
	if _, err := url.ParseRequestURI(target); err == nil || method == "CONNECT" {
		return line
	}
	return []byte(method + " " + invalidTargetPath + "?t=" + url.QueryEscape(target) + " " + proto)
}

// serveInvalidTarget answers a request whose target was not a valid URI, as JSON.
func serveInvalidTarget(w http.ResponseWriter, r *http.Request) {
	target := r.URL.Query().Get("t")
	msg := "the request target is not a valid URI"
	if _, err := url.ParseRequestURI(target); err != nil {
		msg = fmt.Sprintf("the request target %q is not a valid URI: %v (escape %% as %%25 in a key)", target, unwrapURLError(err))
	}
	writeHTTPError(w, http.StatusBadRequest, "bad_request", msg)
}

func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}
