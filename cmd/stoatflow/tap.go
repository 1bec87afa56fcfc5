package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/stoatflow/stoatflow/agent/console"
)

// cmdTap prints the records leaving a node of a running agent, like `vector tap`: GET
// /v1/tap/{node}, sampled by the agent (agent.http.tap.max.records.per.second).
func cmdTap(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stoatflow tap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	client := agentFlags(fs)
	limit := fs.Int("n", 0, "stop after this many records (0: until interrupted)")
	format := fs.String("format", "text", "text (one line per record) or json (one JSON object per line)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: stoatflow tap NODE [-n N] [-format json|text] [-addr host:port] [-token T]\n\nNODE is a node name of the running topology (stoatflow describe, GET /topology).")
		fs.PrintDefaults()
	}
	// The node comes first, flags after it (as in the usage line), or the other way round.
	var node string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		node, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return usageCode(err)
	}
	rest := fs.Args()
	if node == "" && len(rest) > 0 {
		node, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "stoatflow tap: unexpected argument %q\n", rest[0])
		return 2
	}
	if node == "" || (*format != "text" && *format != "json") || *limit < 0 {
		fmt.Fprintln(stderr, "stoatflow tap: needs NODE, -format text or json, and -n ≥ 0")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	c := client()
	err := tap(ctx, c, node, *limit, func(event string, ev json.RawMessage) error {
		if *format == "json" {
			_, err := fmt.Fprintf(stdout, "%s\n", ev)
			return err
		}
		var e console.TapEvent
		if err := json.Unmarshal(ev, &e); err != nil {
			return err
		}
		line := tapLine(e)
		if event == "skipped" {
			line = fmt.Sprintf("(%d skipped, none shown since)", e.Skipped)
		}
		_, err := fmt.Fprintln(stdout, line)
		return err
	}, func(lost int64) {
		fmt.Fprintf(stderr, "stoatflow tap: %d records not shown: this client fell behind\n", lost)
	})
	switch {
	case err == nil, ctx.Err() != nil:
		return 0
	default:
		fmt.Fprintln(stderr, "stoatflow tap:", err)
		return 1
	}
}

// tap reads the server-sent events of GET /v1/tap/{node} until limit records (0: no limit),
// the end of ctx, or the end of the stream, which is an error. show sees the events
// "record" and "skipped" (records skipped while none was shown), lost the counts of "lost".
func tap(ctx context.Context, c *queryClient, node string, limit int, show func(event string, data json.RawMessage) error, lost func(int64)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/tap/"+url.PathEscape(node), nil)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	// No overall timeout: a tap lasts as long as it is read. The agent sends a comment every
	// 15 s, so a dead connection is noticed by the transport's keep-alives.
	resp, err := (&http.Client{Transport: c.http.Transport}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error, Code string }
		if json.NewDecoder(resp.Body).Decode(&e) != nil || e.Error == "" {
			return &apiFailure{status: resp.StatusCode, msg: "the agent answered " + resp.Status, code: "http"}
		}
		return &apiFailure{status: resp.StatusCode, msg: e.Error, code: e.Code}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	event, n := "", 0
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && (event == "record" || event == "skipped"):
			if err := show(event, json.RawMessage(strings.TrimPrefix(line, "data: "))); err != nil {
				return err
			}
			if event == "record" {
				if n++; limit > 0 && n >= limit {
					return nil
				}
			}
		case strings.HasPrefix(line, "data: ") && event == "lost":
			var l struct{ Lost int64 }
			if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &l) == nil {
				lost(l.Lost)
			}
		case line == "":
			event = ""
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return err
	}
	if ctx.Err() != nil {
		return nil
	}
	return errors.New("the agent ended the tap (it is shutting down)")
}

// tapLine is a record as one line of text: time, key, value, headers, where it came from.
func tapLine(e console.TapEvent) string {
	var b strings.Builder
	b.WriteString(time.UnixMilli(e.Timestamp).UTC().Format("2006-01-02T15:04:05.000Z"))
	fmt.Fprintf(&b, " key=%s value=%s", compactJSON(e.Key), compactJSON(e.Value))
	for _, h := range e.Headers {
		if h.Base64 != "" {
			fmt.Fprintf(&b, " header.%s=base64:%s", h.Key, h.Base64)
		} else {
			fmt.Fprintf(&b, " header.%s=%q", h.Key, h.Value)
		}
	}
	fmt.Fprintf(&b, " from=%s-%d@%d", e.Topic, e.Partition, e.Offset)
	if e.Skipped > 0 {
		fmt.Fprintf(&b, " (%d skipped before)", e.Skipped)
	}
	return b.String()
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
