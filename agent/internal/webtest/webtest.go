// Package webtest holds what the HTTP tests of the agent and of its query package share:
// requests as a local client sends them, JSON answers decoded, and a client that never
// finishes its request.
package webtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Request is a request as a local client sends it: to localhost, a body as JSON.
func Request(method, target, body string) *http.Request {
	r := httptest.NewRequest(method, "http://localhost"+target, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

// Serve has h answer a Request in-process and decodes the first JSON document of the
// answer, numbers as json.Number; an answer that is not an object comes as {"list": ...}.
func Serve(t *testing.T, h http.Handler, method, target, body string) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, Request(method, target, body))
	dec := json.NewDecoder(rec.Body)
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	obj, _ := v.(map[string]any)
	if obj == nil {
		obj = map[string]any{"list": v}
	}
	return rec.Code, obj
}

// ItemKeys are the keys of a page's items, comma-separated.
func ItemKeys(t *testing.T, obj map[string]any) string {
	t.Helper()
	items, ok := obj["items"].([]any)
	if !ok {
		t.Fatalf("no items in %v", obj)
	}
	var ks []string
	for _, it := range items {
		ks = append(ks, fmt.Sprint(it.(map[string]any)["key"]))
	}
	return strings.Join(ks, ",")
}

// SlowClient sends request (the headers of a request and part of its body, say) and never
// the rest; the connection closes when the test ends.
func SlowClient(t *testing.T, addr, request string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	return c
}
