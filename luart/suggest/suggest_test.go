package suggest

import "testing"

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "abc", 3}, {"commit", "commit", 0}, {"comit", "commit", 1}, {"cmomit", "commit", 1}, {"kitten", "sitting", 3}} {
		if got := Distance(c.a, c.b); got != c.d {
			t.Errorf("%q %q: %d, want %d", c.a, c.b, got, c.d)
		}
	}
	if _, ok := Closest("zzzzzzzz", []string{"streams.poll.ms"}); ok {
		t.Error("far-off name got a suggestion")
	}
}
