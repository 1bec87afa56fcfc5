package agent

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStreamsGroupProcessIDKeptInStateDir: an agent keeps its process id in its state
// directory in Kafka Streams' file and format, reads back the one a Kafka Streams instance
// wrote there, and replaces a file it cannot read with a new id, as Kafka Streams does.
func TestStreamsGroupProcessIDKeptInStateDir(t *testing.T) {
	a := &Agent{log: slog.New(slog.DiscardHandler)}
	dir := t.TempDir()
	path := filepath.Join(dir, "kafka-streams-process-metadata")
	id, err := a.keepProcessID(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !uuidForm.MatchString(id) {
		t.Fatalf("process id %q is not a UUID", id)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != `{"processId":"`+id+`"}` {
		t.Fatalf("process file %q %v, want Kafka Streams' JSON with %s", b, err, id)
	}
	if again, err := a.keepProcessID(dir); err != nil || again != id {
		t.Fatalf("process id after a restart %q %v, want %s", again, err, id)
	}

	// As Kafka Streams' ObjectMapper writes it; fields it may add later are ignored.
	const kafkaStreams = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
	if err := os.WriteFile(path, []byte(`{"processId":"`+kafkaStreams+`","newerField":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := a.keepProcessID(dir); err != nil || got != kafkaStreams {
		t.Fatalf("process id %q %v, want Kafka Streams' %s", got, err, kafkaStreams)
	}

	for _, broken := range []string{`{"processId":null}`, `{"processId":"not-a-uuid"}`, `{`, ``} {
		if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := a.keepProcessID(dir)
		if err != nil || !uuidForm.MatchString(got) || got == kafkaStreams {
			t.Fatalf("file %q: process id %q %v, want a new one", broken, got, err)
		}
		if again, err := a.keepProcessID(dir); err != nil || again != got {
			t.Fatalf("file %q: process id %q then %q %v, want the new one kept", broken, got, again, err)
		}
	}
}

// TestStreamsGroupProcessFileNotRegular: a process file that is not a regular file is an
// error naming it and what it is, never opened for reading (opening a FIFO waits for a
// writer); one too large to be Kafka Streams' is replaced unread, as a file it cannot read
// is; and the temporary file the new one is written through is never left behind.
func TestStreamsGroupProcessFileNotRegular(t *testing.T) {
	var logs bytes.Buffer
	a := &Agent{log: slog.New(slog.NewTextHandler(&logs, nil))}
	// keep is keepProcessID, which must return in time whatever stands at the path.
	keep := func(t *testing.T, dir string) (string, error) {
		t.Helper()
		type result struct {
			id  string
			err error
		}
		done := make(chan result, 1)
		go func() {
			id, err := a.keepProcessID(dir)
			done <- result{id, err}
		}()
		select {
		case r := <-done:
			if _, err := os.Stat(filepath.Join(dir, processFile+".tmp")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the temporary process file is left behind (%v)", err)
			}
			return r.id, r.err
		case <-time.After(10 * time.Second):
			t.Fatal("keepProcessID hangs")
		}
		return "", nil
	}

	for _, c := range []struct {
		name, want string
		make       func(path string) error
	}{
		{"fifo", "not a regular file (a FIFO)", func(path string) error { return syscall.Mkfifo(path, 0o600) }},
		{"directory", "it is a directory", func(path string) error { return os.Mkdir(path, 0o750) }},
		{"device", "not a regular file (a character device)", func(path string) error { return os.Symlink(os.DevNull, path) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, processFile)
			if err := c.make(path); err != nil {
				t.Fatal(err)
			}
			id, err := keep(t, dir)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("process id %q, error %v; want an error naming %s and saying %q", id, err, path, c.want)
			}
		})
	}

	t.Run("huge", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, processFile)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		// Sparse: 10 GB that take no disk, and would take 10 GB of memory read whole.
		err = f.Truncate(10 << 30)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		logs.Reset()
		id, err := keep(t, dir)
		if err != nil || !uuidForm.MatchString(id) {
			t.Fatalf("process id %q %v, want a new one", id, err)
		}
		if !strings.Contains(logs.String(), "the process id file is too large to be one; making a new process id") {
			t.Errorf("no warning that the file was replaced; the log:\n%s", logs.String())
		}
		if again, err := keep(t, dir); err != nil || again != id {
			t.Fatalf("process id %q then %q %v, want the new one kept", id, again, err)
		}
	})

	t.Run("temporary file", func(t *testing.T) {
		// A crash's leftover, a FIFO even, is replaced, never opened.
		dir := t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(dir, processFile+".tmp"), 0o600); err != nil {
			t.Fatal(err)
		}
		if id, err := keep(t, dir); err != nil || !uuidForm.MatchString(id) {
			t.Fatalf("process id %q %v, want a new one", id, err)
		}
	})
}
