package serdes

import (
	"runtime"
	"strings"
	"testing"
)

// boxedString gives string(data) for every length around the boxes' sizes, copies data,
// allocates once up to maxBoxedString bytes, and its strings survive a collection.
func TestBoxedString(t *testing.T) {
	src := []byte(strings.Repeat("0123456789abcdef", 40))
	kept := map[int]any{}
	for n := 0; n <= len(src); n++ {
		data := src[:n]
		v := boxedString(data)
		s, ok := v.(string)
		if !ok || s != string(data) {
			t.Fatalf("boxedString of %d bytes = %#v", n, v)
		}
		kept[n] = v
	}
	allocs := func(n int) float64 {
		return testing.AllocsPerRun(50, func() { kept[-1] = boxedString(src[:n]) })
	}
	for _, n := range []int{1, 16, 17, 48, 49, 112, 113, 240, 241, maxBoxedString} {
		if a := allocs(n); a != 1 {
			t.Fatalf("%d bytes: %v allocations, want 1", n, a)
		}
	}
	if a := allocs(maxBoxedString + 1); a != 2 {
		t.Fatalf("%d bytes: %v allocations, want 2 (string and box)", maxBoxedString+1, a)
	}
	// The strings share nothing with data.
	orig := strings.Clone(string(src))
	for i := range src {
		src[i] = 'x'
	}
	runtime.GC()
	for n, v := range kept {
		if n >= 0 && v.(string) != orig[:n] {
			t.Fatalf("the string of %d bytes changed after data was overwritten and a collection: %q", n, v)
		}
	}
}
