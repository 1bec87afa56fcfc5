package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatflow/agent/console"
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

// top names the agent of every task of the application and the lag of this agent's; those
// of other agents show their agent only.
func TestTopShowsTheAgentAndLagOfEachTask(t *testing.T) {
	lag := func(n int64) *int64 { return &n }
	a := &console.Status{At: 1_000, Tasks: map[string]*console.TaskStatus{"0_0": {Processed: 10}, "1_0": {Thread: 1, Processed: 0}}}
	b := &console.Status{At: 2_000,
		Tasks: map[string]*console.TaskStatus{"0_0": {Processed: 30, StreamTime: 0}, "1_0": {Thread: 1, Processed: 5, StreamTime: -1}},
		Assignment: &console.Assignment{GroupProtocol: "streams", Self: "stoat-1:9464", Tasks: []console.TaskAgent{
			{TaskID: "0_0", Agent: "stoat-1:9464", ThisAgent: true, RecordsLag: lag(42)},
			{TaskID: "0_1", Agent: "stoat-2:9464", Standbys: []string{"stoat-1:9464"}},
			{TaskID: "1_0", Agent: "stoat-1:9464", ThisAgent: true, RecordsLag: lag(-1)},
			{TaskID: "1_1"},
		}},
	}
	var out strings.Builder
	writeTop(&out, nil, a, b)
	// tabwriter ends every cell with its padding.
	got := regexp.MustCompile(` +\n`).ReplaceAllString(out.String(), "\n")
	for _, want := range []string{
		"2 of 4 tasks on this agent (streams group); lag is known for its own tasks only\n",
		"TASK  AGENT         LAG          THREAD  RECORDS/S  STREAM TIME\n" +
			"0_0   this agent    42           0       20.0       1970-01-01 00:00:00.000\n" +
			"0_1   stoat-2:9464  –            –       –          –\n" +
			"1_0   this agent    not fetched  1       5.0        none yet\n" +
			"1_1   none named    –            –       –          –\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("top shows\n%s\nwithout\n%s", got, want)
		}
	}

	// In a classic group the active agent runs every task.
	b.Assignment = &console.Assignment{GroupProtocol: "classic", Tasks: []console.TaskAgent{
		{TaskID: "0_0", ThisAgent: true, RecordsLag: lag(0)}, {TaskID: "1_0", ThisAgent: true, RecordsLag: lag(3)}}}
	out.Reset()
	writeTop(&out, nil, a, b)
	if got, want := out.String(), "2 of 2 tasks on this agent (classic group)\n"; !strings.Contains(got, want) {
		t.Errorf("top shows\n%s\nwithout %q", got, want)
	}
}
