// Package watch polls files for changes, for `stoatflow test -w` and `stoatflow run
// --watch`. Polling needs no platform support and sees editors that replace a file by
// renaming a new one over it; a few dozen scripts cost a few stats per interval.
package watch

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Interval is how often the files are polled.
const Interval = 500 * time.Millisecond

type stamp struct {
	modTime time.Time
	size    int64
	exists  bool
}

// Watcher polls a list of files.
type Watcher struct {
	list func() []string
	last map[string]stamp
}

// New watches the files list returns, as they are now; list is called at every poll, so
// files that appear are seen.
func New(list func() []string) *Watcher {
	return &Watcher{list: list, last: snapshot(list())}
}

// Run calls changed with the paths that changed, once files have changed and then stayed
// as they are for one interval (an editor that writes a file in steps causes one call);
// it returns when ctx is done.
func (w *Watcher) Run(ctx context.Context, interval time.Duration, changed func([]string)) {
	var dirty map[string]bool
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := snapshot(w.list())
		diff := differ(w.last, now)
		w.last = now
		switch {
		case len(diff) > 0:
			if dirty == nil {
				dirty = map[string]bool{}
			}
			for _, p := range diff {
				dirty[p] = true
			}
		case dirty != nil:
			paths := make([]string, 0, len(dirty))
			for p := range dirty {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			dirty = nil
			changed(paths)
		}
	}
}

func snapshot(paths []string) map[string]stamp {
	out := make(map[string]stamp, len(paths))
	for _, p := range paths {
		if info, err := os.Stat(p); err == nil {
			out[p] = stamp{modTime: info.ModTime(), size: info.Size(), exists: true}
		} else {
			out[p] = stamp{}
		}
	}
	return out
}

func differ(a, b map[string]stamp) []string {
	var out []string
	for p, s := range b {
		if old, ok := a[p]; !ok || old != s {
			out = append(out, p)
		}
	}
	for p := range a {
		if _, ok := b[p]; !ok {
			out = append(out, p)
		}
	}
	return out
}

// LuaFiles lists the .lua files named in paths and those below the directories in paths.
func LuaFiles(paths ...string) []string {
	var out []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil || !info.IsDir() {
			out = append(out, p)
			continue
		}
		// A directory that cannot be read yields what could be: the next poll tries again.
		_ = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".lua") {
				out = append(out, path)
			}
			return nil
		})
	}
	return out
}
