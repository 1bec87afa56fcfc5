package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// q quits top, as in top(1); a stdin that ends quits nothing.
func TestTopQuitsOnQ(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c := &queryClient{base: srv.URL, http: srv.Client()}
	run := func(input string) chan int {
		quit := make(chan struct{})
		go watchQuit(strings.NewReader(input), quit)
		code := make(chan int, 1)
		go func() { code <- top(t.Context(), c, quit, io.Discard, io.Discard, 10*time.Millisecond, 0) }()
		return code
	}
	select {
	case code := <-run("xq"):
		if code != 0 {
			t.Fatalf("top after q: exit %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("top went on after a q")
	}
	select {
	case code := <-run(""):
		t.Fatalf("top quit (exit %d) at the end of its input", code)
	case <-time.After(100 * time.Millisecond):
	}
}
