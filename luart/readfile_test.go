package luart

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Scripts and the modules they require must be regular files: a FIFO would hang the load,
// a device stream into memory.
func TestSpecialFilesAreNotRead(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "mod.lua")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(dir, "main.lua")
	if err := os.WriteFile(main, []byte(`local m = require("mod")`+"\nreturn require(\"stoat\").builder()"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for path, want := range map[string]string{
			fifo:        "mod.lua: not a regular file",
			main:        "mod.lua: not a regular file",
			"/dev/zero": "/dev/zero: not a regular file (a device)",
		} {
			rt, err := New(Options{CallTimeout: time.Second, Stdout: &strings.Builder{}})
			if err != nil {
				t.Error(err)
				return
			}
			_, err = rt.LoadScripts([]string{path})
			rt.Close()
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %q", path, err, want)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("a special file hung the load")
	}
}
