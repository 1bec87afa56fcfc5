package luart

import (
	"strings"
	"testing"
)

// Calling what is not there names it: a method call the receiver's type and the closest
// method it has, a global the closest global function; pcall still catches the error, and
// getmetatable(nil) does not hand out nil's metatable.
func TestCallingNilNamesWhatWasCalled(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"string method", `return v:lowr()`, `pipeline.lua:4: string has no method "lowr"; did you mean "lower"?`},
		{"string method in an expression", "local x = 1\n  return v:uppr() .. x", `pipeline.lua:5: string has no method "uppr"; did you mean "upper"?`},
		{"string method, nothing close", `return v:frobnicate()`, `string has no method "frobnicate" (it has: byte, char, find, format, gmatch, gsub, len, lower, match, rep, reverse, sub, upper)`},
		{"table method", `local M = {} function M:shout(x) return x end return M:shuot(v)`, `pipeline.lua:4: table has no method "shuot"; did you mean "shout"?`},
		{"table without methods", `local M = {n = 1} return M:shout(v)`, `table has no method "shout" (it has no methods)`},
		{"global", `return tostrng(v)`, `pipeline.lua:4: attempt to call a nil value (global "tostrng"); did you mean "tostring"?`},
		{"field", `return string.lowr(v)`, `pipeline.lua:4: attempt to call a nil value ("lowr")`},
		{"local", `local f return f(v)`, `pipeline.lua:4: attempt to call a nil value ("f")`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := storeDriver(t, prelude+"b:stream(\"in\"):mapValues(function(v)\n  "+c.body+"\nend):to(\"out\")\nreturn b")
			err := d.Pipe("in", []byte("k"), []byte("Hello"), 1, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v\nwant it to contain %s", err, c.want)
			}
		})
	}
	d := storeDriver(t, prelude+`b:stream("in"):mapValues(function(v)
  local ok, err = pcall(function() return v:lowr() end)
  return tostring(ok) .. " " .. tostring(getmetatable(nil)) .. " " .. err
end):to("out")
return b`)
	pipe(t, d, "in", "k", "Hello")
	if got := outputs(d, "out"); len(got) != 1 || !strings.HasPrefix(got[0].v, "false false ") ||
		!strings.HasSuffix(got[0].v, `pipeline.lua:4: string has no method "lowr"; did you mean "lower"?`) {
		t.Fatalf("out = %v", got)
	}
}
