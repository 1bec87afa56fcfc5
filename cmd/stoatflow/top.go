package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/stoatflow/stoatflow/agent/console"
	"github.com/stoatflow/stoatflow/pipeline"
)

// agentFlags are the flags of the commands that talk to a running agent: where it listens
// and its token.
func agentFlags(fs *flag.FlagSet) func() *queryClient {
	addr := fs.String("addr", "127.0.0.1:9464", "the agent's HTTP address (agent.http.listen); https://host:port for TLS")
	token := fs.String("token", "", "bearer token (agent.http.token); default $STOATFLOW_TOKEN")
	return func() *queryClient {
		base := strings.TrimRight(*addr, "/")
		if !strings.Contains(base, "://") {
			base = "http://" + base
		}
		if *token == "" {
			*token = os.Getenv("STOATFLOW_TOKEN")
		}
		return &queryClient{base: base, token: *token, http: &http.Client{Timeout: 30 * time.Second}}
	}
}

// cmdTop shows a running agent's per-node rates, lag, watermark and commits, and the
// application's tasks (the agent running each; for this agent's, its lag, the worker it
// runs on, its rate, its stream time), refreshed every interval, like
// `vector top`. It reads GET /v1/status and GET /topology. q quits, as in top(1): on a
// terminal without Enter (its input is put in cbreak mode meanwhile).
func cmdTop(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stoatflow top", flag.ContinueOnError)
	fs.SetOutput(stderr)
	client := agentFlags(fs)
	interval := fs.Duration("interval", time.Second, "time between refreshes")
	frames := fs.Int("n", 0, "stop after this many refreshes (0: until interrupted)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: stoatflow top [-addr host:port] [-token T] [-interval 1s] [-n N]\n\nq or Ctrl-C quits.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageCode(err)
	}
	if fs.NArg() > 0 || *interval <= 0 {
		fs.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if restore, err := cbreak(os.Stdin); err == nil {
		defer restore()
	}
	quit := make(chan struct{})
	go watchQuit(os.Stdin, quit)
	return top(ctx, client(), quit, stdout, stderr, *interval, *frames)
}

// watchQuit closes quit when r delivers a q (or Q). A reader that ends (stdin is /dev/null)
// quits nothing.
func watchQuit(r io.Reader, quit chan<- struct{}) {
	b := make([]byte, 1)
	for {
		n, err := r.Read(b)
		if n == 1 && (b[0] == 'q' || b[0] == 'Q') {
			close(quit)
			return
		}
		if err != nil {
			return
		}
	}
}

// top shows frames of the agent c talks to every interval until frames were shown (0: no
// limit), ctx ends or quit is closed.
func top(ctx context.Context, c *queryClient, quit <-chan struct{}, stdout, stderr io.Writer, interval time.Duration, frames int) int {
	var desc pipeline.TopologyDescription
	if err := c.do(http.MethodGet, "/topology", nil, nil, &desc); err != nil {
		fmt.Fprintln(stderr, "stoatflow top:", err)
		return 1
	}
	clear := isTerminal(stdout)
	var prev *console.Status
	for shown := 0; frames == 0 || shown < frames; {
		var s console.Status
		if err := c.do(http.MethodGet, "/v1/status", nil, nil, &s); err != nil {
			fmt.Fprintln(stderr, "stoatflow top:", err)
			return 1
		}
		if prev != nil {
			if clear {
				fmt.Fprint(stdout, "\x1b[H\x1b[2J")
			}
			writeTop(stdout, desc.NodeNames(), prev, &s)
			shown++
		}
		prev = &s
		if frames > 0 && shown >= frames {
			break
		}
		select {
		case <-ctx.Done():
			return 0
		case <-quit:
			return 0
		case <-time.After(interval):
		}
	}
	return 0
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// writeTop prints one frame: the rates between two statuses.
func writeTop(w io.Writer, nodes []string, a, b *console.Status) {
	dt := float64(b.At-a.At) / 1000
	per := func(x, y float64) float64 {
		if dt <= 0 {
			return 0
		}
		return (y - x) / dt
	}
	wm, lag := "none yet", int64(0)
	if t := b.Time; t != nil {
		if t.Watermark >= 0 {
			wm = fmt.Sprintf("%s (%.1f s behind)", time.UnixMilli(t.Watermark).UTC().Format("2006-01-02 15:04:05.000"), float64(b.At-t.Watermark)/1000)
		}
		for _, p := range t.Partitions {
			lag += max(p.Lag, 0)
		}
	}
	latency := "–"
	if n := b.Commits.LatencyCount - a.Commits.LatencyCount; n > 0 {
		latency = fmt.Sprintf("%.1f ms", 1000*(b.Commits.LatencySeconds-a.Commits.LatencySeconds)/float64(n))
	}
	fmt.Fprintf(w, "StoatFlow %s   watermark %s   consumer lag %d\n", b.State, wm, lag)
	fmt.Fprintf(w, "commits %.1f/s, %s each; %v aborted epochs, %v early commits in all\n\n",
		per(a.Commits.Succeeded, b.Commits.Succeeded), latency, b.Commits.Failed, b.Commits.Early)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tRECORDS/S\tDROPS/S\tLUA %\t")
	for _, name := range nodes {
		x, y := a.Nodes[name], b.Nodes[name]
		if x == nil || y == nil {
			continue
		}
		var drops float64
		var reasons []string
		for reason, v := range y.Dropped {
			if d := per(x.Dropped[reason], v); d > 0 {
				drops += d
				reasons = append(reasons, reason)
			}
		}
		dropText := fmt.Sprintf("%.1f", drops)
		if len(reasons) > 0 {
			dropText += " (" + strings.Join(reasons, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%.1f\t\n", name, per(x.Processed, y.Processed), dropText, 100*per(x.LuaSeconds, y.LuaSeconds))
	}
	writeTasks(tw, a, b, per)
	if err := tw.Flush(); err != nil && !errors.Is(err, os.ErrClosed) {
		fmt.Fprintln(w, err)
	}
}

// writeTasks prints the tasks: every task of the application with the agent running it
// and, for this agent's, its lag, worker, rate and stream time. An agent older than the
// status's assignment names only its own tasks.
func writeTasks(tw io.Writer, a, b *console.Status, per func(x, y float64) float64) {
	type row struct {
		id, agent, lag string
		here           bool
	}
	var rows []row
	if as := b.Assignment; as != nil {
		here := 0
		for _, t := range as.Tasks {
			r := row{id: t.TaskID, agent: t.Agent, lag: "–", here: t.ThisAgent}
			switch {
			case t.ThisAgent:
				here++
				r.agent = "this agent"
			case t.Agent == "":
				r.agent = "none named"
			}
			if t.RecordsLag != nil {
				r.lag = "not fetched"
				if *t.RecordsLag >= 0 {
					r.lag = fmt.Sprint(*t.RecordsLag)
				}
			}
			rows = append(rows, r)
		}
		if len(rows) == 0 {
			return
		}
		fmt.Fprintln(tw, "\t\t\t\t")
		fmt.Fprintf(tw, "%d of %d tasks on this agent (%s group)", here, len(rows), as.GroupProtocol)
		if here < len(rows) {
			fmt.Fprint(tw, "; lag is known for its own tasks only")
		}
		fmt.Fprintln(tw)
	} else {
		for id := range b.Tasks {
			rows = append(rows, row{id: id, agent: "this agent", lag: "–", here: true})
		}
		if len(rows) == 0 {
			return
		}
		slices.SortFunc(rows, func(p, q row) int {
			x, _ := pipeline.ParseTaskID(p.id)
			y, _ := pipeline.ParseTaskID(q.id)
			return x.Compare(y)
		})
		fmt.Fprintln(tw, "\t\t\t\t")
	}
	fmt.Fprintln(tw, "TASK\tAGENT\tLAG\tTHREAD\tRECORDS/S\tSTREAM TIME\t")
	for _, r := range rows {
		y := b.Tasks[r.id]
		if !r.here || y == nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\t–\t–\t–\t\n", r.id, r.agent, r.lag)
			continue
		}
		var before float64
		if x := a.Tasks[r.id]; x != nil {
			before = x.Processed
		}
		st := "none yet"
		if y.StreamTime >= 0 {
			st = time.UnixMilli(y.StreamTime).UTC().Format("2006-01-02 15:04:05.000")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.1f\t%s\t\n", r.id, r.agent, r.lag, y.Thread, per(before, y.Processed), st)
	}
}
