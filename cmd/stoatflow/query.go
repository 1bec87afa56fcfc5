package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stoatflow/stoatflow/agent/query"
)

const queryUsage = `Usage: stoatflow query [-addr host:port] [-token T] [-isolation L] [-stale-stores] COMMAND ...

Commands (docs/queries.md):
  stores                          list the state stores
  get STORE KEY                   read one key
  range STORE [-from K] [-to K] [-prefix P] [-reverse] [-limit N] [-after K]
                                  read keys in order (all of them without bounds)
  count STORE                     approximate number of entries
  windows STORE KEY [-from T] [-to T] [-reverse]
                                  windows or sessions of a key (T: epoch ms or RFC 3339)
  metadata                        every agent with the store partitions it runs and keeps
                                  standby copies of
  metadata STORE                  the agents holding STORE
  metadata STORE KEY [-header NAME=VALUE]...
                                  the partition holding KEY and the host serving it
  iqv2 BODY                       POST an IQv2 request (JSON text, or - for stdin)

Keys are text: the string itself, a decimal number for long and integer keys, JSON text for
json keys, base64 for bytes keys. With -stale-stores a standby answers from its copy of the
stores and says how far each partition it read trails.

Flags:
`

// queryClient talks to a running agent's HTTP endpoints.
type queryClient struct {
	base      string
	token     string
	isolation string
	stale     bool // query.StaleParam
	http      *http.Client
	stdout    io.Writer
}

// errUsage marks a usage error already reported (exit 2).
var errUsage = errors.New("usage")

// apiFailure is an error answer of the agent (exit 1).
type apiFailure struct {
	status    int
	msg, code string
}

func (e *apiFailure) Error() string {
	return fmt.Sprintf("%s (%s, HTTP %d)", e.msg, e.code, e.status)
}

func cmdQuery(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stoatflow query", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9464", "the agent's HTTP address (agent.http.listen); https://host:port for TLS")
	token := fs.String("token", "", "bearer token (agent.http.token); default $STOATFLOW_TOKEN")
	isolation := fs.String("isolation", "", "READ_COMMITTED or READ_UNCOMMITTED (default: the agent's default.interactive.query.isolation.level)")
	stale := fs.Bool("stale-stores", false, "let a standby answer from its copy of the stores, which trails the active's (Kafka Streams' enableStaleStores)")
	fs.Usage = func() {
		fmt.Fprint(stderr, queryUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return usageCode(err)
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	base := strings.TrimRight(*addr, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	if *token == "" {
		*token = os.Getenv("STOATFLOW_TOKEN")
	}
	c := &queryClient{base: base, token: *token, isolation: *isolation, stale: *stale, stdout: stdout}
	c.http = &http.Client{Timeout: time.Minute, CheckRedirect: c.redirect}
	err := c.dispatch(fs.Arg(0), fs.Args()[1:], stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, flag.ErrHelp):
		return 0
	default:
		fmt.Fprintln(stderr, "stoatflow query:", err)
		return 1
	}
}

// positional takes the n leading arguments before the sub-command's flags, so a key may
// start with "-" (a negative number).
func positional(cmd string, args []string, names []string, stderr io.Writer) ([]string, []string, error) {
	if len(args) < len(names) {
		fmt.Fprintf(stderr, "stoatflow query %s: needs %s\n", cmd, strings.Join(names, " "))
		return nil, nil, errUsage
	}
	return args[:len(names)], args[len(names):], nil
}

func subFlags(cmd string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("stoatflow query "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func parseSub(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return errUsage
	}
	return nil
}

// dispatch runs a query command. A store of the wrong type for it is named with the
// command that reads it, where the agent's answer names the HTTP path.
func (c *queryClient) dispatch(cmd string, args []string, stderr io.Writer) error {
	err := c.run(cmd, args, stderr)
	var f *apiFailure
	if errors.As(err, &f) && f.code == "wrong_store_type" && len(args) > 0 {
		store, _, _ := strings.Cut(f.msg, ": ")
		if cmd == "windows" {
			f.msg = fmt.Sprintf("%s: windows reads window and session stores; read it with stoatflow query get %s KEY (or range %s)", store, args[0], args[0])
		} else {
			f.msg = fmt.Sprintf("%s: %s reads key-value stores; read it with stoatflow query windows %s KEY", store, cmd, args[0])
		}
	}
	return err
}

func (c *queryClient) run(cmd string, args []string, stderr io.Writer) error {
	switch cmd {
	case "stores":
		if err := parseSub(subFlags(cmd, stderr), args, stderr); err != nil {
			return err
		}
		return c.stores()
	case "get", "count":
		names := []string{"STORE", "KEY"}
		if cmd == "count" {
			names = names[:1]
		}
		pos, rest, err := positional(cmd, args, names, stderr)
		if err != nil {
			return err
		}
		if err := parseSub(subFlags(cmd, stderr), rest, stderr); err != nil {
			return err
		}
		if cmd == "count" {
			return c.count(pos[0])
		}
		return c.get(pos[0], pos[1])
	case "range":
		pos, rest, err := positional(cmd, args, []string{"STORE"}, stderr)
		if err != nil {
			return err
		}
		fs := subFlags(cmd, stderr)
		q := url.Values{}
		for _, name := range []string{"from", "to", "prefix", "after"} {
			fs.Func(name, "key bound: "+name, func(v string) error { q.Set(name, v); return nil })
		}
		reverse := fs.Bool("reverse", false, "descending key order")
		limit := fs.Int("limit", 0, "items per page (agent default 1000, at most 10000)")
		if err := parseSub(fs, rest, stderr); err != nil {
			return err
		}
		if *reverse {
			q.Set("reverse", "true")
		}
		if *limit != 0 {
			q.Set("limit", strconv.Itoa(*limit))
		}
		return c.rangeKeys(pos[0], q)
	case "windows":
		pos, rest, err := positional(cmd, args, []string{"STORE", "KEY"}, stderr)
		if err != nil {
			return err
		}
		fs := subFlags(cmd, stderr)
		q := url.Values{}
		for _, name := range []string{"from", "to"} {
			fs.Func(name, "window start bound (epoch ms or RFC 3339): "+name, func(v string) error { q.Set(name, v); return nil })
		}
		reverse := fs.Bool("reverse", false, "latest first")
		if err := parseSub(fs, rest, stderr); err != nil {
			return err
		}
		if *reverse {
			q.Set("reverse", "true")
		}
		return c.windows(pos[0], pos[1], q)
	case "metadata":
		// metadata, metadata STORE, metadata STORE KEY: a key may start with "-" (a negative
		// number), so only this command's own flags end the positional arguments.
		n := 0
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			n = 1
			if len(args) > 1 && !isOwnFlag(args[1], "header") {
				n = 2
			}
		}
		fs := subFlags(cmd, stderr)
		var headers []string
		fs.Func("header", "NAME=VALUE record header passed to the key serialiser (repeatable; with KEY)", func(v string) error {
			name, value, ok := strings.Cut(v, "=")
			if !ok || name == "" {
				return fmt.Errorf("%q is not NAME=VALUE", v)
			}
			headers = append(headers, url.QueryEscape(query.HeaderParam+name)+"="+url.QueryEscape(value))
			return nil
		})
		if err := parseSub(fs, args[n:], stderr); err != nil {
			return err
		}
		switch {
		case n == 2:
			return c.metadata(args[0], args[1], strings.Join(headers, "&"))
		case len(headers) > 0:
			fmt.Fprintln(stderr, "stoatflow query metadata: -header needs STORE KEY (it is handed to the key serialiser)")
			return errUsage
		case n == 1:
			return c.agents(query.Path(query.RouteStoreMetadata, args[0], ""))
		}
		return c.agents(query.RouteAllMetadata)
	case "iqv2":
		pos, rest, err := positional(cmd, args, []string{"BODY"}, stderr)
		if err != nil {
			return err
		}
		if err := parseSub(subFlags(cmd, stderr), rest, stderr); err != nil {
			return err
		}
		return c.iqv2(pos[0])
	}
	fmt.Fprintf(stderr, "stoatflow query: unknown command %q\n\n%s", cmd, queryUsage)
	return errUsage
}

// do sends a request and decodes a successful JSON answer into out.
func (c *queryClient) do(method, path string, q url.Values, body io.Reader, out any) error {
	if c.isolation != "" {
		q.Set("isolation", c.isolation)
	}
	if c.stale && method == http.MethodGet {
		q.Set(query.StaleParam, "true")
	}
	u := c.base + path
	if enc := q.Encode(); enc != "" {
		u += "?" + enc
	}
	return c.send(method, u, body, out)
}

// redirect follows an agent of a streams group that sends a read of another agent's
// partition there (docs/queries.md). The agents of one application share agent.http.token,
// so the token goes along, where Go's client would drop it on the way to another host; but
// never from https to http.
func (c *queryClient) redirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects: the agents disagree on which of them holds the partition while it moves; retry")
	}
	if c.token != "" && (req.URL.Scheme == "https" || via[0].URL.Scheme == "http") {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return nil
}

func (c *queryClient) send(method, u string, body io.Reader, out any) error {
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	dec.UseNumber()
	if resp.StatusCode >= 400 {
		var e struct{ Error, Code string }
		if err := dec.Decode(&e); err != nil || e.Error == "" {
			return &apiFailure{status: resp.StatusCode, msg: "the agent answered " + resp.Status, code: "http"}
		}
		return &apiFailure{status: resp.StatusCode, msg: e.Error, code: e.Code}
	}
	if err := dec.Decode(out); err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, u, err)
	}
	return nil
}

func (c *queryClient) stores() error {
	var stores []query.StoreInfo
	if err := c.do(http.MethodGet, query.RouteStores, url.Values{}, nil, &stores); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tKEY SERDE\tVALUE SERDE\tPARTITIONS")
	for _, s := range stores {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", s.Name, s.Type, s.KeySerde, s.ValueSerde, s.Partitions)
	}
	return tw.Flush()
}

func (c *queryClient) get(store, key string) error {
	var e query.KVItem
	if err := c.do(http.MethodGet, query.Path(query.RouteKey, store, key), url.Values{}, nil, &e); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "key\t%s\n", show(e.Key))
	fmt.Fprintf(tw, "value\t%s\n", show(e.Value))
	fmt.Fprintf(tw, "timestamp\t%s\n", showTime(e.Timestamp))
	fmt.Fprintf(tw, "partition\t%d\n", e.Partition)
	if e.Headers != nil {
		fmt.Fprintf(tw, "headers\t%s\n", showHeaders(e.Headers))
	}
	if e.Lags != nil {
		fmt.Fprintf(tw, "lag\t%s\n", showLags(e.Lags))
	}
	return tw.Flush()
}

func (c *queryClient) count(store string) error {
	var n query.Count
	if err := c.do(http.MethodGet, query.Path(query.RouteCount, store, ""), url.Values{}, nil, &n); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, n.Count)
	if n.Lags != nil {
		fmt.Fprintf(c.stdout, "(read from a standby: %s)\n", showLags(n.Lags))
	}
	return nil
}

func (c *queryClient) rangeKeys(store string, q url.Values) error {
	var page query.Page[query.KVItem]
	if err := c.do(http.MethodGet, query.Path(query.RouteKeys, store, ""), q, nil, &page); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tTIMESTAMP\tPARTITION")
	for _, e := range page.Items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", show(e.Key), show(e.Value), showTime(e.Timestamp), e.Partition)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Lags != nil {
		fmt.Fprintf(c.stdout, "(read from a standby: %s)\n", showLags(page.Lags))
	}
	if page.Error != "" {
		return &apiFailure{status: http.StatusOK, msg: "the read stopped: " + page.Error, code: page.Code}
	}
	if page.Next != "" {
		fmt.Fprintf(c.stdout, "(more: add -after %s)\n", shellQuote(page.Next))
	}
	return nil
}

func (c *queryClient) windows(store, key string, q url.Values) error {
	var page query.Page[query.WindowItem]
	if err := c.do(http.MethodGet, query.Path(query.RouteWindows, store, key), q, nil, &page); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tWINDOW START\tWINDOW END\tVALUE")
	for _, w := range page.Items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", show(w.Key), showTime(w.WindowStart), showTime(w.WindowEnd), show(w.Value))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Lags != nil {
		fmt.Fprintf(c.stdout, "(read from a standby: %s)\n", showLags(page.Lags))
	}
	if page.Error != "" {
		return &apiFailure{status: http.StatusOK, msg: "the read stopped: " + page.Error, code: page.Code}
	}
	return nil
}

func (c *queryClient) metadata(store, key, headers string) error {
	u := c.base + query.Path(query.RouteMetadata, store, key)
	if headers != "" {
		u += "?" + headers
	}
	var m query.KeyMetadata
	if err := c.send(http.MethodGet, u, nil, &m); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "partition     %d\nactiveHost    %s\nstandbyHosts  %s\n", m.Partition, m.ActiveHost, strings.Join(m.StandbyHosts, " "))
	return nil
}

// isOwnFlag reports whether arg is the flag name, or help, as the flag package reads them.
func isOwnFlag(arg, name string) bool {
	f := strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-")
	f, _, _ = strings.Cut(f, "=")
	return strings.HasPrefix(arg, "-") && (f == name || f == "h" || f == "help")
}

// agents prints the agents of GET /v1/metadata or /v1/metadata/{store}: a line per agent
// and store, with the partitions it runs and those it keeps standby copies of.
func (c *queryClient) agents(path string) error {
	var ms []query.StreamsMetadata
	// Not c.do: the metadata takes no staleStores, and its isolation changes nothing.
	if err := c.send(http.MethodGet, c.base+path, nil, &ms); err != nil {
		return err
	}
	parts := func(ps []int32, ok bool) string {
		if !ok {
			return "-"
		}
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = strconv.Itoa(int(p))
		}
		return strings.Join(out, " ")
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tSTORE\tPARTITIONS\tSTANDBY PARTITIONS")
	for _, m := range ms {
		held := maps.Clone(m.StorePartitions)
		if held == nil {
			held = map[string][]int32{}
		}
		for s, ps := range m.StandbyStorePartitions {
			if _, ok := held[s]; !ok {
				held[s] = ps
			}
		}
		stores := slices.Sorted(maps.Keys(held))
		if len(stores) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\n", m.HostInfo)
		}
		for _, s := range stores {
			active, ok := m.StorePartitions[s]
			standby, sok := m.StandbyStorePartitions[s]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.HostInfo, s, parts(active, ok), parts(standby, sok))
		}
	}
	return tw.Flush()
}

func (c *queryClient) iqv2(body string) error {
	if body == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		body = string(b)
	}
	if c.stale {
		var req map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &req); err != nil {
			return fmt.Errorf("the IQv2 body is not a JSON object: %w", err)
		}
		req[query.StaleParam] = json.RawMessage("true")
		b, _ := json.Marshal(req)
		body = string(b)
	}
	var raw json.RawMessage
	if err := c.do(http.MethodPost, query.RouteIQv2, url.Values{}, strings.NewReader(body), &raw); err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err := c.stdout.Write(out.Bytes())
	return err
}

// show prints a value for a person: strings as they are, everything else as JSON.
func show(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// showTime prints epoch milliseconds as UTC time and number; -1 is Kafka's "no timestamp".
func showTime(n int64) string {
	if n == -1 {
		return "-"
	}
	return fmt.Sprintf("%s (%d)", time.UnixMilli(n).UTC().Format("2006-01-02T15:04:05.000Z"), n)
}

// showLags prints the lags of the standby copies an answer was read from, by partition.
func showLags(lags query.Lags) string {
	parts := make([]int, 0, len(lags))
	for p := range lags {
		n, _ := strconv.Atoi(p)
		parts = append(parts, n)
	}
	slices.Sort(parts)
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		l := lags[strconv.Itoa(p)]
		out = append(out, fmt.Sprintf("partition %d %d offsets behind (at %d of %d)", p, l.OffsetLag, l.CurrentOffsetPosition, l.EndOffsetPosition))
	}
	return strings.Join(out, ", ")
}

// showHeaders prints a KVItem's headers: a list of {"key", "value"} or {"key", "valueBase64"}.
func showHeaders(headers any) string {
	hs, _ := headers.([]any)
	parts := make([]string, 0, len(hs))
	for _, x := range hs {
		h, _ := x.(map[string]any)
		v, ok := h["value"]
		if !ok {
			v = "base64:" + fmt.Sprint(h["valueBase64"])
		}
		parts = append(parts, fmt.Sprintf("%v=%v", h["key"], v))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain characters.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.,:/@+=", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
