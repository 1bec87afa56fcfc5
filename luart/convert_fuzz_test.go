package luart

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline/serdes"
)

// FuzzConvertJSONRoundTrip takes every value the json serde reads, converts it to Lua and back,
// and checks it survives as docs/lua.md promises: objects, arrays (empty ones too), nulls
// inside them, strings and booleans unchanged; numbers keep their value as a double, except
// integers beyond ±2^53 (within int64) and numbers beyond the double range, which come back as
// their decimal text; values nested deeper than fromLua's 100 levels are an error, never a
// panic. The result must serialise again.
func FuzzConvertJSONRoundTrip(f *testing.F) {
	rt, err := New(Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(rt.Close)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := serdes.JSON{}.Deserialize("t", nil, data)
		if err != nil || v == nil {
			return
		}
		top := rt.L.GetTop()
		back, err := rt.fromLua(rt.toLua(v))
		if rt.L.GetTop() != top {
			t.Fatalf("conversion of %q left %d values on the Lua stack", data, rt.L.GetTop()-top)
		}
		if d := nestingDepth(v, 0); d > 100 {
			if err == nil || !strings.Contains(err.Error(), "deeper than 100 levels") {
				t.Fatalf("value nested %d levels: err = %v, want the depth error", d, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("fromLua(toLua(%q)): %v", data, err)
		}
		if path, ok := sameJSON(v, back, "$"); !ok {
			t.Fatalf("round trip of %q differs at %s: got %#v", data, path, back)
		}
		if _, err := (serdes.JSON{}).Serialize("t", nil, back); err != nil {
			t.Fatalf("serialising the round trip of %q: %v", data, err)
		}
	})
}

// nestingDepth is the depth of the deepest value in v, counted as fromLua counts it (v itself
// is at depth d).
func nestingDepth(v any, d int) int {
	deepest := d
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			deepest = max(deepest, nestingDepth(e, d+1))
		}
	case map[string]any:
		for _, e := range x {
			deepest = max(deepest, nestingDepth(e, d+1))
		}
	}
	return deepest
}

// sameJSON compares a value read by the json serde with its round trip through Lua under the
// documented conversion rules, returning the path of the first difference.
func sameJSON(want, got any, path string) (string, bool) {
	switch w := want.(type) {
	case nil, string, bool:
		return path, want == got
	case json.Number:
		return path, sameNumber(w, got)
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path, false
		}
		for i := range w {
			if p, ok := sameJSON(w[i], g[i], path+"["+strconv.Itoa(i)+"]"); !ok {
				return p, false
			}
		}
		return path, true
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return path, false
		}
		for k, e := range w {
			ge, present := g[k]
			if !present {
				return path + "[" + strconv.Quote(k) + "]", false
			}
			if p, ok := sameJSON(e, ge, path+"["+strconv.Quote(k)+"]"); !ok {
				return p, false
			}
		}
		return path, true
	}
	return path, false
}

func sameNumber(n json.Number, got any) bool {
	if i, err := n.Int64(); err == nil && (i > maxExactInt || i < -maxExactInt) {
		return got == strconv.FormatInt(i, 10)
	}
	f, err := n.Float64()
	if err != nil {
		return got == string(n)
	}
	switch g := got.(type) {
	case int64:
		return float64(g) == f && f == math.Trunc(f)
	case float64:
		// fromLua gives int64 for every integral value within ±9.2e18.
		return g == f && (f != math.Trunc(f) || math.Abs(f) > 9.2e18)
	}
	return false
}
