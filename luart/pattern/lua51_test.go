package pattern

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// lua51Path finds the reference interpreter; without it the test fails in CI (which installs
// it) and is skipped elsewhere.
func lua51Path(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("lua5.1")
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("lua5.1 not found (CI is set; .ci/run installs the Debian package lua5.1): %v", err)
	}
	t.Skip("lua5.1 not installed (Debian package lua5.1)")
	return ""
}

// lua51Runner reads, from its standard input, the helpers and then each expression, every
// one as its length, a newline and its bytes, and runs patternHelpers .. "return " .. expr as
// evalLua does. For each it writes "error <n>\n<message>\n", or "values <count>\n" and per
// value "<type> <n>\n<tostring(value)>\n", so that the Go side formats both interpreters'
// answers alike.
const lua51Runner = `
local function chunk()
  local n = io.read("*n")
  if not n then return nil end
  io.read(1)
  return io.read(n)
end
local function put(kind, s) io.write(kind, " ", #s, "\n", s, "\n") end
local function report(ok, ...)
  if not ok then return put("error", tostring((...))) end
  io.write("values ", select("#", ...), "\n")
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    put(type(v), tostring(v))
  end
end
local helpers = chunk()
for expr in chunk do
  local fn, err = loadstring(helpers .. "return " .. expr, "=<string>")
  if fn then report(pcall(fn)) else put("error", "load error: " .. err) end
end
`

// runLua51 evaluates exprs with lua5.1 and formats each answer as evalLua does.
func runLua51(t *testing.T, lua51 string, exprs []string) []string {
	t.Helper()
	var in bytes.Buffer
	for _, s := range append([]string{patternHelpers}, exprs...) {
		fmt.Fprintf(&in, "%d\n%s", len(s), s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, lua51, "-e", lua51Runner)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("lua5.1: %v\n%s", err, stderr.String())
	}
	r := bufio.NewReader(bytes.NewReader(out))
	// item reads one "<kind> <n>\n" line and, unless kind is "values", the n bytes after it.
	item := func() (kind string, n int, text string) {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("lua5.1 output ends early: %v", err)
		}
		if _, err := fmt.Sscanf(line, "%s %d", &kind, &n); err != nil {
			t.Fatalf("lua5.1 output line %q: %v", line, err)
		}
		if kind == "values" {
			return kind, n, ""
		}
		b := make([]byte, n+1)
		if _, err := io.ReadFull(r, b); err != nil {
			t.Fatalf("lua5.1 output ends early: %v", err)
		}
		return kind, n, string(b[:n])
	}
	answers := make([]string, len(exprs))
	for i := range exprs {
		kind, n, text := item()
		if kind == "error" {
			answers[i] = "error: " + luaChunkPrefix.ReplaceAllString(text, "")
			continue
		}
		parts := make([]string, n)
		for j := range parts {
			kind, _, text := item()
			if kind == "string" {
				text = strconv.Quote(text)
			}
			parts[j] = text
		}
		answers[i] = strings.Join(parts, ", ")
	}
	if rest, _ := io.ReadAll(r); len(rest) > 0 {
		t.Fatalf("lua5.1 wrote more than %d answers: %q", len(exprs), rest)
	}
	return answers
}

// The cases say what Lua 5.1 returns; the reference interpreter, PUC-Rio Lua 5.1.5 as Debian
// packages it, agrees, for the cases and for what the differences say Lua 5.1 does.
func TestPatternCasesAgainstLua51(t *testing.T) {
	lua51 := lua51Path(t)
	var exprs []string
	for _, c := range patternCases {
		exprs = append(exprs, c.expr)
	}
	for _, c := range patternDifferences {
		exprs = append(exprs, c.expr)
	}
	got := runLua51(t, lua51, exprs)
	for i, c := range patternCases {
		if !resultIs(got[i], c.want) {
			t.Errorf("lua5.1: %s = %s, the case says %s", c.expr, got[i], c.want)
		}
	}
	for i, c := range patternDifferences {
		if g := got[len(patternCases)+i]; !resultIs(g, c.lua51) {
			t.Errorf("lua5.1: %s = %s, the difference says %s", c.expr, g, c.lua51)
		}
	}
}
