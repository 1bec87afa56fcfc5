package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The records a tap skipped while it showed none are printed where they happened, and -n
// counts records only.
func TestTapPrintsTheRecordsSkippedWhileNoneWasShown(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(": tapping n\n\n" +
			"event: skipped\ndata: {\"node\":\"n\",\"skipped\":7}\n\n" +
			"event: record\ndata: {\"node\":\"n\",\"timestamp\":0,\"key\":\"k\",\"value\":1,\"headers\":[],\"topic\":\"in\",\"partition\":0,\"offset\":9,\"skipped\":2}\n\n"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	code, out, errOut := runCLI("tap", "n", "-n", "1", "-addr", addr)
	want := "(7 skipped, none shown since)\n1970-01-01T00:00:00.000Z key=\"k\" value=1 from=in-0@9 (2 skipped before)\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, %s\nout:\n%s\nwant:\n%s", code, errOut, out, want)
	}
	code, out, errOut = runCLI("tap", "n", "-n", "1", "-format", "json", "-addr", addr)
	if code != 0 || !strings.HasPrefix(out, "{\"node\":\"n\",\"skipped\":7}\n{\"node\":\"n\",\"timestamp\":0,") || strings.Count(out, "\n") != 2 {
		t.Fatalf("exit %d, %s\nout:\n%s", code, errOut, out)
	}
}
