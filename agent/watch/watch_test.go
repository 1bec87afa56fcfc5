package watch

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A change is reported once, after the files stayed the same for an interval, with the
// paths that changed; a new file below a watched directory counts.
func TestFilesReportsEachChangeOnce(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.lua")
	if err := os.WriteFile(a, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan []string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	w := New(func() []string { return LuaFiles(dir) })
	go func() {
		w.Run(ctx, 10*time.Millisecond, func(p []string) { got <- p })
		close(done)
	}()
	defer func() { cancel(); <-done }()
	wait := func(want ...string) {
		t.Helper()
		select {
		case p := <-got:
			if !slices.Equal(p, want) {
				t.Fatalf("changed %v, want %v", p, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no change reported, want %v", want)
		}
	}
	if err := os.WriteFile(a, []byte("xy"), 0o644); err != nil {
		t.Fatal(err)
	}
	wait(a)
	b := filepath.Join(dir, "sub", "b.lua")
	if err := os.MkdirAll(filepath.Dir(b), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("ignored"), 0o644); err != nil {
		t.Fatal(err)
	}
	wait(b)
	select {
	case p := <-got:
		t.Fatalf("a second report %v for one change", p)
	case <-time.After(100 * time.Millisecond):
	}
}
