package luart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// math.random's bad arguments are errors that name the file and line, in a pipeline's
// callback and in a test file (where the panic inside gopher-lua lost them), as in Lua 5.1.
func TestMathRandom(t *testing.T) {
	d := driver(t, prelude+`b:stream("in"):mapValues(function(v)
  local n = tonumber(v)
  local a, b2 = math.random(n), math.random(-n, n)
  assert(a >= 1 and a <= n and b2 >= -n and b2 <= n and math.random() < 1, "out of range")
  if n == 1 then return tostring(math.random(0)) end
  return "ok"
end):to("out")
return b`)
	for range 50 {
		if err := d.Pipe("in", []byte("k"), []byte("7"), 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	err := d.Pipe("in", []byte("k"), []byte("1"), 1, nil)
	if err == nil || !strings.Contains(fromScript(err.Error()), "pipeline.lua:7: bad argument #1 to random (interval is empty)") {
		t.Fatalf("math.random(0): %v", err)
	}

	dir := t.TempDir()
	for name, text := range map[string]string{
		"p.lua":      prelude + "b:stream(\"in\"):to(\"out\")\nreturn b",
		"p_test.lua": "local x = math.random(0)\n",
		"q_test.lua": "local x = math.random(3, 2)\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	_, _, _ = RunTests([]string{dir}, TestOptions{Out: &out})
	for _, want := range []string{"p_test.lua:1: bad argument #1 to random (interval is empty)", "q_test.lua:1: bad argument #2 to random (interval is empty)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stoatflow test printed:\n%s\nwant %q", out.String(), want)
		}
	}
}
