package schemaregistry

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// Embedded is an in-process Schema Registry (franz-go's srfake) serving Confluent's REST API,
// for schema.registry.url = "embedded" next to the embedded broker. It keeps schemas in
// memory only and checks no compatibility.
type Embedded struct {
	srv *http.Server
	ln  net.Listener
}

// StartEmbedded serves a new in-memory registry on addr (port 0 picks a free port).
func StartEmbedded(addr string) (*Embedded, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("embedded schema registry: %w", err)
	}
	e := &Embedded{ln: ln, srv: &http.Server{Handler: srfake.NewRegistry().Handler(), ReadHeaderTimeout: 10 * time.Second}}
	// Serve returns when Close closes the listener; clients see any other end as refused
	// connections, which they report.
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

// URL is the registry's address, for schema registry clients.
func (e *Embedded) URL() string { return "http://" + e.ln.Addr().String() }

// Close stops serving.
func (e *Embedded) Close() error { return e.srv.Close() }
