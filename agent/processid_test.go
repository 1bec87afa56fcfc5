package agent

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
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
