// Package schemaregistry is the agent's side of the Schema Registry: a client of Confluent's
// REST API (franz-go's pkg/sr) that implements schemas.Registry with bounded retries, and
// the embedded in-process registry that schema.registry.url = "embedded" starts.
package schemaregistry

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// Options configure a Client; the zero durations take Confluent's client defaults.
type Options struct {
	URLs []string
	// User and Password are basic.auth.user.info's two halves; Token is bearer.auth.token.
	User, Password, Token string
	// Headers are sent with every request (bearer.auth.logical.cluster and
	// bearer.auth.identity.pool.id become Confluent Cloud's headers).
	Headers map[string]string
	TLS     *tls.Config
	// MaxRetries, RetryWait and RetryMaxWait are max.retries, retries.wait.ms and
	// retries.max.wait.ms: a transient failure is retried with a doubling wait.
	MaxRetries              int
	RetryWait, RetryMaxWait time.Duration
	// ConnectTimeout and ReadTimeout are http.connect.timeout.ms and http.read.timeout.ms.
	ConnectTimeout, ReadTimeout time.Duration
	// MaxResponseBytes bounds the body of one answer (agent.schema.registry.max.response.bytes);
	// 0 is DefaultMaxResponseBytes. A larger answer fails the call, unread.
	MaxResponseBytes int64
	// OnWait, when set, is told the start of the oldest call in progress whenever it changes
	// (the zero time when none is): what the agent shows in /readyz and a metric.
	OnWait func(oldest time.Time)
	Logger *slog.Logger
}

// defaultTimeout is Confluent's http.connect.timeout.ms and http.read.timeout.ms.
const defaultTimeout = 60 * time.Second

// DefaultMaxResponseBytes bounds a registry's answer: a schema with its references is
// kilobytes, rarely a megabyte; a registry answering hundreds of megabytes (broken or
// hostile) would otherwise be read whole into memory.
const DefaultMaxResponseBytes = 8 << 20

// MaxErrorBytes bounds the text of an error from the registry (its answer's message, a
// schema that does not parse), as Lua errors are bounded: such text ends up in logs, the
// console and dead letters, once per record.
const MaxErrorBytes = 4096

// Bound is the longest a call may take: every attempt timing out, with every wait between.
func (o Options) Bound() time.Duration {
	attempt := saturatingAdd(cmp.Or(o.ConnectTimeout, defaultTimeout), cmp.Or(o.ReadTimeout, defaultTimeout))
	total := attempt
	for i, wait := 0, o.RetryWait; i < o.MaxRetries; i, wait = i+1, min(saturatingAdd(wait, wait), o.RetryMaxWait) {
		total = saturatingAdd(total, saturatingAdd(wait, attempt))
	}
	return total
}

// saturatingAdd adds two non-negative durations, stopping at the largest one.
func saturatingAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Client is a Schema Registry client. It is safe for concurrent use.
type Client struct {
	cl   *sr.Client
	opts Options

	mu       sync.Mutex
	calls    map[uint64]time.Time // start of each call in progress, by a number of its own
	nextCall uint64
}

// NewClient returns a client of the registry at opts.URLs.
func NewClient(opts Options) (*Client, error) {
	if len(opts.URLs) == 0 {
		return nil, errors.New("schema.registry.url: no URL")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.ConnectTimeout = cmp.Or(opts.ConnectTimeout, defaultTimeout)
	opts.ReadTimeout = cmp.Or(opts.ReadTimeout, defaultTimeout)
	dialer := &net.Dialer{Timeout: opts.ConnectTimeout}
	transport := &http.Transport{
		DialContext:           dialer.DialContext,
		TLSClientConfig:       opts.TLS,
		TLSHandshakeTimeout:   opts.ConnectTimeout,
		ResponseHeaderTimeout: opts.ReadTimeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
	}
	opts.MaxResponseBytes = cmp.Or(opts.MaxResponseBytes, DefaultMaxResponseBytes)
	clOpts := []sr.ClientOpt{
		sr.URLs(opts.URLs...),
		// The whole request, body included, is bounded: a registry that stalls mid-answer
		// must not hold the processing loop.
		sr.HTTPClient(&http.Client{Transport: &capBody{next: transport, max: opts.MaxResponseBytes}, Timeout: opts.ConnectTimeout + opts.ReadTimeout}),
		sr.UserAgent("stoatflow"),
	}
	if opts.User != "" || opts.Password != "" {
		clOpts = append(clOpts, sr.BasicAuth(opts.User, opts.Password))
	}
	if opts.Token != "" {
		clOpts = append(clOpts, sr.BearerToken(opts.Token))
	}
	if len(opts.Headers) > 0 {
		clOpts = append(clOpts, sr.PreReq(func(req *http.Request) error {
			for k, v := range opts.Headers {
				req.Header.Set(k, v)
			}
			return nil
		}))
	}
	cl, err := sr.NewClient(clOpts...)
	if err != nil {
		return nil, fmt.Errorf("schema.registry.url: %w", err)
	}
	return &Client{cl: cl, opts: opts, calls: map[uint64]time.Time{}}, nil
}

// capBody fails an answer larger than max: one announced as larger at once, one that turns
// out larger when its max+1st byte is read. sr reads answers whole (io.ReadAll).
type capBody struct {
	next http.RoundTripper
	max  int64
}

func (c *capBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > c.max {
		resp.Body.Close()
		return nil, c.tooLarge()
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: c.max, err: c.tooLarge()}
	return resp, nil
}

func (c *capBody) tooLarge() error {
	return fmt.Errorf("the schema registry's answer is larger than %d bytes (agent.schema.registry.max.response.bytes)", c.max)
}

type cappedBody struct {
	io.ReadCloser
	left int64 // bytes that may still be read
	err  error
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.err
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return 0, b.err
	}
	return n, err
}

// waiting records a call in progress until the returned function is called, telling
// Options.OnWait when the oldest call in progress changes.
func (c *Client) waiting() (done func()) {
	if c.opts.OnWait == nil {
		return func() {}
	}
	c.mu.Lock()
	id := c.nextCall
	c.nextCall++
	c.calls[id] = time.Now()
	if len(c.calls) == 1 {
		c.opts.OnWait(c.calls[id])
	}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.calls, id)
		var oldest time.Time
		for _, t := range c.calls {
			if oldest.IsZero() || t.Before(oldest) {
				oldest = t
			}
		}
		c.opts.OnWait(oldest)
	}
}

// SchemaByID implements schemas.Registry.
func (c *Client) SchemaByID(ctx context.Context, id int) (schemas.Schema, error) {
	var out sr.Schema
	err := c.retry(ctx, func(ctx context.Context) (err error) {
		out, err = c.cl.SchemaByID(ctx, id)
		return err
	})
	if err != nil {
		// The caller names the schema id: saying it here too repeated it.
		return schemas.Schema{}, err
	}
	return fromSR(out)
}

// Register implements schemas.Registry.
func (c *Client) Register(ctx context.Context, subject string, s schemas.Schema) (int, error) {
	var id int
	err := c.retry(ctx, func(ctx context.Context) (err error) {
		id, err = c.cl.RegisterSchema(ctx, subject, toSR(s), -1, -1)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("registering under subject %q: %w", subject, err)
	}
	return id, nil
}

// LookUp implements schemas.Registry.
func (c *Client) LookUp(ctx context.Context, subject string, s schemas.Schema) (int, error) {
	var out sr.SubjectSchema
	err := c.retry(ctx, func(ctx context.Context) (err error) {
		out, err = c.cl.LookupSchema(ctx, subject, toSR(s))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("looking up the schema under subject %q (auto.register.schemas is false): %w", subject, err)
	}
	return out.ID, nil
}

// Version implements schemas.Registry.
func (c *Client) Version(ctx context.Context, subject string, version int) (schemas.Registered, error) {
	var out sr.SubjectSchema
	err := c.retry(ctx, func(ctx context.Context) (err error) {
		out, err = c.cl.SchemaByVersion(ctx, subject, version)
		return err
	})
	if err != nil {
		v := fmt.Sprint(version)
		if version == schemas.Latest {
			v = "latest"
		}
		return schemas.Registered{}, fmt.Errorf("subject %q version %s: %w", subject, v, err)
	}
	s, err := fromSR(out.Schema)
	if err != nil {
		return schemas.Registered{}, err
	}
	return schemas.Registered{Schema: s, ID: out.ID, Subject: out.Subject, Version: out.Version}, nil
}

// retry runs call until it succeeds, fails for good, or has failed transiently
// MaxRetries+1 times; waits double from RetryWait up to RetryMaxWait. A not-found answer
// wraps schemas.ErrNotFound.
func (c *Client) retry(ctx context.Context, call func(context.Context) error) error {
	defer c.waiting()()
	wait := c.opts.RetryWait
	for attempt := 0; ; attempt++ {
		err := call(ctx)
		if err == nil {
			return nil
		}
		var re *sr.ResponseError
		if errors.As(err, &re) && (re.StatusCode == http.StatusNotFound || sr.IsNotFoundError(re.ErrorCode)) {
			return fmt.Errorf("%w (%s)", schemas.ErrNotFound, responseText(re))
		}
		if !transient(err) {
			if re != nil {
				return errors.New(responseText(re))
			}
			return err
		}
		err = schemas.CutError(err, MaxErrorBytes)
		if attempt >= c.opts.MaxRetries || ctx.Err() != nil {
			return fmt.Errorf("the schema registry is unavailable after %d attempts: %w", attempt+1, err)
		}
		c.opts.Logger.Warn("schema registry request failed; retrying", "attempt", attempt+1, "wait", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("the schema registry is unavailable: %w (gave up: %v)", err, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, c.opts.RetryMaxWait)
	}
}

// transient reports whether err may pass on a retry: no answer at all, or an answer that
// says the registry is busy or failing (408, 429, 5xx).
func transient(err error) bool {
	var re *sr.ResponseError
	if !errors.As(err, &re) {
		return true
	}
	return re.StatusCode == http.StatusRequestTimeout || re.StatusCode == http.StatusTooManyRequests || re.StatusCode >= 500
}

func responseText(re *sr.ResponseError) string {
	msg := re.Message
	if msg == "" {
		msg = string(re.Raw)
	}
	return fmt.Sprintf("the schema registry answered %d: %s", re.StatusCode, schemas.CutText(msg, MaxErrorBytes))
}

var formats = map[sr.SchemaType]schemas.Format{
	sr.TypeAvro: schemas.FormatAvro, sr.TypeProtobuf: schemas.FormatProtobuf, sr.TypeJSON: schemas.FormatJSON,
}

func fromSR(s sr.Schema) (schemas.Schema, error) {
	f, ok := formats[s.Type]
	if !ok {
		return schemas.Schema{}, fmt.Errorf("unknown schema type %v", s.Type)
	}
	out := schemas.Schema{Format: f, Text: s.Schema}
	for _, r := range s.References {
		out.References = append(out.References, schemas.Reference{Name: r.Name, Subject: r.Subject, Version: r.Version})
	}
	return out, nil
}

func toSR(s schemas.Schema) sr.Schema {
	out := sr.Schema{Schema: s.Text}
	for t, f := range formats {
		if f == s.Format {
			out.Type = t
		}
	}
	for _, r := range s.References {
		out.References = append(out.References, sr.SchemaReference{Name: r.Name, Subject: r.Subject, Version: r.Version})
	}
	return out
}
