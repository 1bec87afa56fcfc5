package schemaregistry

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

const cardSchema = `{"type": "record", "name": "Card", "fields": [{"name": "number", "type": "string"}]}`

func fastOptions(url string) Options {
	return Options{URLs: []string{url}, MaxRetries: 3, RetryWait: time.Millisecond, RetryMaxWait: 4 * time.Millisecond,
		ConnectTimeout: time.Second, ReadTimeout: time.Second}
}

// failing makes the registry answer status to the first n requests.
func failing(reg *srfake.Registry, n int32, status int) *atomic.Int32 {
	var seen atomic.Int32
	reg.Intercept(func(w http.ResponseWriter, _ *http.Request) bool {
		if seen.Add(1) > n {
			return false
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error_code": 50001, "message": "busy"}`))
		return true
	})
	return &seen
}

func TestTransientErrorsAreRetried(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	seen := failing(reg, 2, http.StatusServiceUnavailable)
	c, err := NewClient(fastOptions(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	id, err := c.Register(t.Context(), "cards-value", schemas.Schema{Format: schemas.FormatAvro, Text: cardSchema})
	if err != nil {
		t.Fatal(err)
	}
	if n := seen.Load(); n != 3 {
		t.Fatalf("%d requests, want 2 failures and the success", n)
	}
	s, err := c.SchemaByID(t.Context(), id)
	if err != nil || s.Text != cardSchema || s.Format != schemas.FormatAvro {
		t.Fatalf("schema %d: %+v, %v", id, s, err)
	}
}

func TestRetriesAreBounded(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	seen := failing(reg, 1000, http.StatusServiceUnavailable)
	c, _ := NewClient(fastOptions(reg.URL()))
	_, err := c.SchemaByID(t.Context(), 1)
	if err == nil || !strings.Contains(err.Error(), "unavailable after 4 attempts") {
		t.Fatalf("error %v", err)
	}
	if n := seen.Load(); n != 4 {
		t.Fatalf("%d requests, want max.retries 3 + 1", n)
	}
}

func TestNotFoundIsNotRetried(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	var seen atomic.Int32
	reg.Intercept(func(http.ResponseWriter, *http.Request) bool { seen.Add(1); return false })
	c, _ := NewClient(fastOptions(reg.URL()))
	_, err := c.SchemaByID(t.Context(), 42)
	// The serde names the id: the client's error does not repeat it (schema id 2: schema id 2: ...).
	if !errors.Is(err, schemas.ErrNotFound) || strings.Contains(err.Error(), "schema id") {
		t.Fatalf("error %v", err)
	}
	_, err = c.Version(t.Context(), "nothing-value", schemas.Latest)
	if !errors.Is(err, schemas.ErrNotFound) || !strings.Contains(err.Error(), `subject "nothing-value" version latest`) {
		t.Fatalf("error %v", err)
	}
	if n := seen.Load(); n != 2 {
		t.Fatalf("%d requests for two lookups", n)
	}
}

func TestRegistryDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, _ := NewClient(fastOptions("http://" + addr))
	start := time.Now()
	_, err = c.SchemaByID(t.Context(), 1)
	if err == nil || !strings.Contains(err.Error(), "unavailable after 4 attempts") {
		t.Fatalf("error %v", err)
	}
	if d := time.Since(start); d > fastOptions("").Bound() {
		t.Fatalf("took %v, over the bound %v", d, fastOptions("").Bound())
	}
}

// TestStalledRegistryIsBounded: a registry that accepts the request and never answers
// costs one read timeout per attempt, not forever.
func TestStalledRegistryIsBounded(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	release := make(chan struct{})
	defer close(release)
	reg.Intercept(func(_ http.ResponseWriter, r *http.Request) bool {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return true
	})
	o := fastOptions(reg.URL())
	o.MaxRetries, o.ReadTimeout = 1, 50*time.Millisecond
	c, _ := NewClient(o)
	start := time.Now()
	if _, err := c.SchemaByID(t.Context(), 1); err == nil || !strings.Contains(err.Error(), "unavailable after 2 attempts") {
		t.Fatalf("error %v", err)
	}
	if d := time.Since(start); d > o.Bound()+time.Second {
		t.Fatalf("took %v, bound %v", d, o.Bound())
	}
}

func TestAuthentication(t *testing.T) {
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("ada:s3cret"))
	for _, c := range []struct {
		expect string
		opts   func(*Options)
	}{
		{basic, func(o *Options) { o.User, o.Password = "ada", "s3cret" }},
		{"Bearer t0ken", func(o *Options) { o.Token = "t0ken" }},
	} {
		reg := srfake.New(srfake.WithAuth(c.expect))
		o := fastOptions(reg.URL())
		c.opts(&o)
		cl, _ := NewClient(o)
		if _, err := cl.Register(t.Context(), "s", schemas.Schema{Format: schemas.FormatAvro, Text: cardSchema}); err != nil {
			t.Errorf("%s: %v", c.expect, err)
		}
		anon, _ := NewClient(fastOptions(reg.URL()))
		if _, err := anon.Register(t.Context(), "s", schemas.Schema{Format: schemas.FormatAvro, Text: cardSchema}); err == nil || !strings.Contains(err.Error(), "answered 401") {
			t.Errorf("%s: without credentials: %v", c.expect, err)
		}
		reg.Close()
	}
}

func TestHeaders(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	var got atomic.Value
	reg.Intercept(func(_ http.ResponseWriter, r *http.Request) bool {
		got.Store(r.Header.Get("target-sr-cluster"))
		return false
	})
	o := fastOptions(reg.URL())
	o.Headers = map[string]string{"target-sr-cluster": "lsrc-1"}
	c, _ := NewClient(o)
	_, _ = c.SchemaByID(t.Context(), 1)
	if got.Load() != "lsrc-1" {
		t.Fatalf("target-sr-cluster header %v", got.Load())
	}
}

// TestEmbeddedServesConfluentsAPI: the embedded registry answers franz-go's client, used
// directly, and the serdes through Client.
func TestEmbeddedServesConfluentsAPI(t *testing.T) {
	e, err := StartEmbedded("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	direct, err := sr.NewClient(sr.URLs(e.URL()))
	if err != nil {
		t.Fatal(err)
	}
	ss, err := direct.CreateSchema(t.Context(), "cards-value", sr.Schema{Schema: cardSchema, Type: sr.TypeAvro})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := NewClient(fastOptions(e.URL()))
	f := schemas.NewFactory(schemas.Config{Registry: c, AutoRegister: true})
	w, err := f.New("avro", false, schemas.Spec{Schema: cardSchema})
	if err != nil {
		t.Fatal(err)
	}
	b, err := w.Serialize("cards", nil, map[string]any{"number": "42"})
	if err != nil {
		t.Fatal(err)
	}
	if int(b[4]) != ss.ID {
		t.Fatalf("the serde wrote id %d, the registry gave %d", b[4], ss.ID)
	}
	v, err := w.Deserialize("cards", nil, b)
	if err != nil || v.(map[string]any)["number"] != "42" {
		t.Fatalf("read %v, %v", v, err)
	}
}

// TestBoundSaturates: the largest values the config accepts give the largest duration, not
// an overflowed (negative or small) bound.
func TestBoundSaturates(t *testing.T) {
	big := time.Duration(math.MaxInt32) * time.Millisecond
	o := Options{MaxRetries: 100, RetryWait: big, RetryMaxWait: big, ConnectTimeout: math.MaxInt64 / 2, ReadTimeout: math.MaxInt64 / 2}
	if b := o.Bound(); b != math.MaxInt64 {
		t.Fatalf("Bound = %v, want the largest duration", b)
	}
	small := Options{MaxRetries: 2, RetryWait: time.Second, RetryMaxWait: 3 * time.Second, ConnectTimeout: time.Second, ReadTimeout: time.Second}
	// three attempts of 2 s, waits of 1 s and 2 s
	if b := small.Bound(); b != 9*time.Second {
		t.Fatalf("Bound = %v, want 9s", b)
	}
}

// An answer larger than MaxResponseBytes fails the call unread, whether it says its length
// or streams: a 300 MiB answer took the agent from 95 MB to 4 GB before. Its start is not
// quoted whole in the error either.
func TestLargeAnswersAreRefused(t *testing.T) {
	for _, announce := range []bool{true, false} {
		var served atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			body := `{"schema": "` + strings.Repeat("x", 64<<20) + `"}`
			if announce {
				w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			}
			w.Header().Set("Content-Type", "application/json")
			n, _ := io.WriteString(w, body)
			served.Add(int64(n))
		}))
		o := fastOptions(srv.URL)
		o.MaxRetries, o.MaxResponseBytes = 0, 1<<20
		c, err := NewClient(o)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.SchemaByID(t.Context(), 1)
		if err == nil || !strings.Contains(err.Error(), "answer is larger than 1048576 bytes (agent.schema.registry.max.response.bytes)") || len(err.Error()) > MaxErrorBytes+200 {
			t.Errorf("announced %v: error %.300v", announce, err)
		}
		srv.CloseClientConnections()
		srv.Close()
	}
}

// A registry error that quotes megabytes is cut to MaxErrorBytes.
func TestRegistryErrorsAreCut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = io.WriteString(w, `{"error_code": 42201, "message": "`+strings.Repeat("y", 1<<20)+`"}`)
	}))
	defer srv.Close()
	c, _ := NewClient(fastOptions(srv.URL))
	_, err := c.SchemaByID(t.Context(), 1)
	if err == nil || len(err.Error()) > MaxErrorBytes+100 || !strings.Contains(err.Error(), "cut from") {
		t.Fatalf("error of %d bytes: %.200v", len(fmt.Sprint(err)), err)
	}
}

// OnWait hears of the oldest call in progress, and of none once it ends.
func TestOnWait(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	release := make(chan struct{})
	reg.Intercept(func(_ http.ResponseWriter, r *http.Request) bool {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return false
	})
	var mu sync.Mutex
	var seen []time.Time
	o := fastOptions(reg.URL())
	o.OnWait = func(oldest time.Time) { mu.Lock(); seen = append(seen, oldest); mu.Unlock() }
	c, _ := NewClient(o)
	done := make(chan error, 1)
	go func() { _, err := c.SchemaByID(context.Background(), 1); done <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("OnWait not told of the call")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0].IsZero() || !seen[1].IsZero() {
		t.Fatalf("OnWait heard %v, want the start and then zero", seen)
	}
}
