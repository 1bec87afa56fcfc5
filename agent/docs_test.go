package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stoatflow/stoatflow/agent/demo"
	"github.com/stoatflow/stoatflow/metrics"
)

// The curl examples of the HTTP docs are read out of the markdown and run against the
// example they name, so the docs cannot drift from what the agent answers. A ```sh block
// runs against `make run` (word count) unless its first line is `# make run EXAMPLE=name`;
// a block preceded by an HTML comment starting with `<!-- not run:` is skipped (it needs
// what make run does not have, a token or TLS, or its answer is a stream or abbreviated; the
// comment names the test that covers it instead). Every curl line is followed by the output
// it prints, each line as a `# ` comment; the rules of comparing it with the real output
// are docOutputMatches'.
var curlDocs = []string{"../docs/http.md", "../docs/queries.md"}

// docHost is the address the docs' examples talk to; the test's agents listen elsewhere.
const docHost = "localhost:9464"

type docCommand struct {
	where string // file:line
	line  string
	want  []string // the output, without "# "
}

type docBlock struct {
	where    string
	example  string
	commands []docCommand
}

func TestDocsCurlExamples(t *testing.T) {
	var blocks []docBlock
	for _, path := range curlDocs {
		blocks = append(blocks, readDocBlocks(t, path)...)
	}
	byExample := map[string][]docBlock{}
	var names []string
	for _, b := range blocks {
		if byExample[b.example] == nil {
			names = append(names, b.example)
		}
		byExample[b.example] = append(byExample[b.example], b)
	}
	configs := exampleConfigs(t)
	ran := 0
	for _, name := range names {
		path, ok := configs[name]
		if !ok {
			t.Errorf("%s: no example %q (make run EXAMPLE=%s has no scripts/%s.toml)", byExample[name][0].where, name, name, name)
			continue
		}
		ex := &docExample{t: t, path: path}
		for _, b := range byExample[name] {
			for _, c := range b.commands {
				ex.run(c)
				ran++
			}
		}
		ex.stop()
	}
	if ran < 30 {
		t.Fatalf("ran %d curl examples; the docs have more: is the parser lost?", ran)
	}
}

// readDocBlocks reads the runnable ```sh blocks of a markdown file.
func readDocBlocks(t *testing.T, path string) []docBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		out     []docBlock
		cur     *docBlock
		skip    bool
		skipped bool // the block after a "not run" comment
		n       int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		where := fmt.Sprintf("%s:%d", strings.TrimPrefix(path, "../"), n)
		switch {
		case cur == nil && !skip && strings.HasPrefix(line, "<!-- not run:"):
			skipped = true
		case cur == nil && !skip && line == "```sh":
			if skipped {
				skip, skipped = true, false
				continue
			}
			cur = &docBlock{where: where, example: "wordcount"}
		case cur == nil && !skip && strings.HasPrefix(line, "```"):
			skip = true // another language's block
		case skip && line == "```":
			skip = false
		case cur != nil && line == "```":
			if len(cur.commands) > 0 {
				out = append(out, *cur)
			}
			cur = nil
		case cur != nil && len(cur.commands) == 0 && strings.HasPrefix(line, "# make run EXAMPLE="):
			cur.example = strings.TrimPrefix(line, "# make run EXAMPLE=")
		case cur != nil && strings.HasPrefix(line, "curl "):
			cur.commands = append(cur.commands, docCommand{where: where, line: line})
		case cur != nil && strings.HasPrefix(line, "#") && len(cur.commands) > 0:
			c := &cur.commands[len(cur.commands)-1]
			c.want = append(c.want, strings.TrimPrefix(strings.TrimPrefix(line, "#"), " "))
		case cur != nil && strings.TrimSpace(line) != "":
			t.Errorf("%s: a line the docs test cannot run: %q (only curl lines and their # output; mark the block <!-- not run: why -->)", where, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// docExample is one example agent, started when a command needs it and again after a
// command stopped it (POST /v1/close).
type docExample struct {
	t    *testing.T
	path string
	ra   *runningAgent
	m    *metrics.Metrics
	addr string
}

func (ex *docExample) run(c docCommand) {
	t := ex.t
	req, err := parseCurl(c.line)
	if err != nil {
		t.Errorf("%s: %v", c.where, err)
		return
	}
	ex.start()
	status, got, err := req.do(ex.addr)
	if err != nil {
		t.Errorf("%s: %s: %v", c.where, c.line, err)
		return
	}
	port := ex.addr[strings.LastIndexByte(ex.addr, ':'):]
	want := make([]string, len(c.want))
	for i, w := range c.want {
		want[i] = strings.ReplaceAll(strings.ReplaceAll(w, "127.0.0.1:9464", "127.0.0.1"+port), docHost, "localhost"+port)
	}
	if why := docOutputMatches(want, got, status); why != "" {
		t.Errorf("%s: %s\n%s\nthe docs say:\n%s\nthe agent answered:\n%s", c.where, c.line, why, strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}

// start runs the example unless it is running, and waits until its demo feeder's first
// ticks are processed and committed, so that what the docs show is there.
func (ex *docExample) start() {
	t := ex.t
	if ex.ra != nil && ex.ra.a.State() == StateRunning {
		return
	}
	ex.stop()
	cfg := loadExample(t, ex.path, t.TempDir())
	// The docs show the default group.instance.id, <application.id>-<hostname>, of a host
	// named host1.
	cfg.GroupInstanceID = cfg.ApplicationID + "-host1"
	ex.m = metrics.New()
	ex.ra = startAgentWith(t, cfg, ex.m)
	addr, err := ex.ra.a.HTTPAddr(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ex.addr = strings.Replace(addr, "127.0.0.1:", "localhost:", 1)
	rt, b, err := loadTopology(cfg, offlineSchemas(cfg), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	feeder, err := demo.Lookup(cfg.EmbeddedDemo, b.SourceTopics())
	if err != nil {
		t.Fatal(err)
	}
	const ticks = 6
	want := map[string]int{}
	for i := range ticks {
		for _, r := range feeder.Tick(i, time.Now()) {
			want[r.Topic]++
		}
	}
	for topic, n := range want {
		waitCounter(t, ex.ra, fmt.Sprintf("%d records consumed from %s", n, topic), func() float64 {
			return testutil.ToFloat64(ex.m.RecordsConsumed.WithLabelValues(topic))
		}, float64(n))
	}
	commits := testutil.ToFloat64(ex.m.Commits.WithLabelValues(metrics.ResultSuccess))
	waitCounter(t, ex.ra, "two more commits", func() float64 {
		return testutil.ToFloat64(ex.m.Commits.WithLabelValues(metrics.ResultSuccess))
	}, commits+2)
}

func waitCounter(t *testing.T, ra *runningAgent, what string, value func() float64, want float64) {
	t.Helper()
	pollFor(t, 30*time.Second, what, func() bool {
		if st := ra.a.State(); st != StateRunning {
			failStopped(t, ra, st, nil)
		}
		return value() >= want
	})
}

func (ex *docExample) stop() {
	if ex.ra == nil {
		return
	}
	if err := ex.ra.stop(ex.t); err != nil {
		ex.t.Errorf("%s: %v", ex.path, err)
	}
	ex.ra = nil
}

// curlRequest is what a docs' curl line asks for: curl's -s, -i, -X, -d and -H, and an
// output filtered by `| grep 'RE'`.
type curlRequest struct {
	method, url, body string
	headers           http.Header
	include           bool
	grep              *regexp.Regexp
}

func parseCurl(line string) (*curlRequest, error) {
	words, err := shellWords(line)
	if err != nil {
		return nil, err
	}
	r := &curlRequest{method: "GET", headers: http.Header{}}
	args := words[1:]
	if i := indexOf(args, "|"); i >= 0 {
		rest := args[i+1:]
		if len(rest) != 2 || rest[0] != "grep" {
			return nil, fmt.Errorf("the docs test runs only `| grep 'RE'` after curl, not %q", strings.Join(rest, " "))
		}
		if r.grep, err = regexp.Compile(rest[1]); err != nil {
			return nil, err
		}
		args = args[:i]
	}
	methodSet := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		value := func() (string, error) {
			if i+1 == len(args) {
				return "", fmt.Errorf("curl %s needs a value", a)
			}
			i++
			return args[i], nil
		}
		switch {
		case a == "-s":
		case a == "-i", a == "-si", a == "-is":
			r.include = true
		case a == "-X":
			m, err := value()
			if err != nil {
				return nil, err
			}
			r.method, methodSet = m, true
		case a == "-d":
			d, err := value()
			if err != nil {
				return nil, err
			}
			r.body = d
			if !methodSet {
				r.method = "POST"
			}
			if r.headers.Get("Content-Type") == "" {
				r.headers.Set("Content-Type", "application/x-www-form-urlencoded")
			}
		case a == "-H":
			h, err := value()
			if err != nil {
				return nil, err
			}
			name, v, ok := strings.Cut(h, ":")
			if !ok {
				return nil, fmt.Errorf("curl -H %q: not a header", h)
			}
			r.headers.Set(strings.TrimSpace(name), strings.TrimSpace(v))
		case strings.HasPrefix(a, "-"):
			return nil, fmt.Errorf("curl option %s: the docs test knows -s, -i, -X, -d and -H only", a)
		case r.url != "":
			return nil, fmt.Errorf("two URLs: %s and %s", r.url, a)
		case !strings.HasPrefix(a, docHost+"/"):
			return nil, fmt.Errorf("URL %s: the docs' examples talk to %s", a, docHost)
		default:
			r.url = a
		}
	}
	if r.url == "" {
		return nil, fmt.Errorf("no URL in %q", line)
	}
	return r, nil
}

func indexOf(words []string, w string) int {
	for i, x := range words {
		if x == w {
			return i
		}
	}
	return -1
}

// shellWords splits a command line as sh does for the quoting the docs use: single and
// double quotes, a lone | and a # comment.
func shellWords(line string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		inTok bool
	)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed ' in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i, inTok = i+1+j, true
		case c == '"':
			j := strings.IndexByte(line[i+1:], '"')
			if j < 0 {
				return nil, fmt.Errorf("unclosed \" in %q", line)
			}
			if strings.ContainsAny(line[i+1:i+1+j], `$\`+"`") {
				return nil, fmt.Errorf("the docs test does not expand %q", line[i+1:i+1+j])
			}
			cur.WriteString(line[i+1 : i+1+j])
			i, inTok = i+1+j, true
		case c == ' ' || c == '\t':
			if inTok {
				words, inTok = append(words, cur.String()), false
				cur.Reset()
			}
		case c == '#' && !inTok:
			i = len(line)
		case strings.IndexByte("$`\\;&<>()", c) >= 0:
			return nil, fmt.Errorf("the docs test does not run %q (shell syntax %q)", line, c)
		default:
			cur.WriteByte(c)
			inTok = true
		}
	}
	if inTok {
		words = append(words, cur.String())
	}
	return words, nil
}

// do sends the request to the agent at addr, as curl would (Host names the agent), and
// returns the status and what curl would print, line by line.
func (r *curlRequest) do(addr string) (int, []string, error) {
	url := "http://" + addr + strings.TrimPrefix(r.url, docHost)
	req, err := http.NewRequest(r.method, url, strings.NewReader(r.body))
	if err != nil {
		return 0, nil, err
	}
	req.Header = r.headers.Clone()
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h // -H 'Host: ...' replaces curl's, which names the URL's host
	}
	req.Header.Set("User-Agent", "curl/8")
	req.Header.Set("Accept", "*/*")
	if r.body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	var out []string
	if r.include {
		out = append(out, fmt.Sprintf("HTTP/1.1 %s", resp.Status))
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
		if r.grep == nil || r.grep.MatchString(l) {
			out = append(out, l)
		}
	}
	return resp.StatusCode, out, nil
}

// docOutputMatches says how got differs from what the docs show, or "" when it matches:
//   - a status line (`HTTP/1.1 200 OK`) must be the same; without one, the answer must be
//     2xx unless the docs show an error ({"code": ...});
//   - JSON is compared by structure: the same keys, the same strings, booleans and nulls,
//     numbers where the docs have numbers (counts, offsets and times vary), except
//     "partition" and "partitions", which must be equal; a list must have at least the
//     items the docs show, and those compare in order;
//   - other text line by line, a line "..." standing for any lines, and a number that ends
//     a line (a metric's value) standing for any number;
//   - no output shown: anything goes.
func docOutputMatches(want, got []string, status int) string {
	var wj, gj any
	isJSON := json.Unmarshal([]byte(strings.Join(want, "\n")), &wj) == nil
	switch {
	case len(want) > 0 && strings.HasPrefix(want[0], "HTTP/"):
		if len(got) == 0 || got[0] != want[0] {
			return "another status"
		}
		want, got = want[1:], got[1:]
		isJSON = json.Unmarshal([]byte(strings.Join(want, "\n")), &wj) == nil
	case status/100 != 2:
		if obj, ok := wj.(map[string]any); !isJSON || !ok || obj["code"] == nil {
			return fmt.Sprintf("status %d", status)
		}
	}
	if len(want) == 0 {
		return ""
	}
	if isJSON {
		if err := json.Unmarshal([]byte(strings.Join(got, "\n")), &gj); err != nil {
			return "the answer is not JSON: " + err.Error()
		}
		return jsonMatches("", wj, gj)
	}
	return textMatches(want, got)
}

func jsonMatches(path string, want, got any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: an object in the docs, %T in the answer", path, got)
		}
		if wk, gk := keysOf(w), keysOf(g); wk != gk {
			return fmt.Sprintf("%s: keys %s in the docs, %s in the answer", path, wk, gk)
		}
		for k := range w {
			if why := jsonMatches(path+"."+k, w[k], g[k]); why != "" {
				return why
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("%s: a list in the docs, %T in the answer", path, got)
		}
		if len(g) < len(w) {
			return fmt.Sprintf("%s: %d items in the docs, %d in the answer", path, len(w), len(g))
		}
		for i := range w {
			if why := jsonMatches(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); why != "" {
				return why
			}
		}
	case float64:
		g, ok := got.(float64)
		if !ok {
			return fmt.Sprintf("%s: a number in the docs, %v in the answer", path, got)
		}
		if (strings.HasSuffix(path, ".partition") || strings.HasSuffix(path, ".partitions")) && g != w {
			return fmt.Sprintf("%s: %v in the docs, %v in the answer", path, w, g)
		}
	default:
		if want != got {
			return fmt.Sprintf("%s: %v in the docs, %v in the answer", path, want, got)
		}
	}
	return ""
}

func keysOf(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return "[" + strings.Join(keys, " ") + "]"
}

var trailingNumber = regexp.MustCompile(`-?[0-9][0-9.e+-]*$`)

func textMatches(want, got []string) string {
	same := func(w, g string) bool {
		return w == g || trailingNumber.MatchString(w) && trailingNumber.MatchString(g) &&
			trailingNumber.ReplaceAllString(w, "") == trailingNumber.ReplaceAllString(g, "")
	}
	i, anyLines := 0, false
	for _, w := range want {
		if strings.TrimSpace(w) == "..." {
			anyLines = true
			continue
		}
		for anyLines && i < len(got) && !same(w, got[i]) {
			i++
		}
		if i == len(got) || !same(w, got[i]) {
			return fmt.Sprintf("no line %q where the docs show it", w)
		}
		i, anyLines = i+1, false
	}
	if !anyLines && i < len(got) {
		return fmt.Sprintf("more lines than the docs show, from %q", got[i])
	}
	return ""
}
