package kafkaio

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

func TestEmbeddedListensWhereAsked(t *testing.T) {
	e := startBroker(t)
	addrs := e.Addrs()
	if len(addrs) != 1 {
		t.Fatalf("Addrs = %v, want one broker", addrs)
	}
	host, port, err := net.SplitHostPort(addrs[0])
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("Addrs = %v, want 127.0.0.1 and a chosen port", addrs)
	}

	// A fixed address is used as given; taking it twice fails with an error naming it.
	again, err := StartEmbedded(addrs[0], nil)
	if err == nil {
		again.Close()
		t.Fatalf("second broker on %s: want an address-in-use error", addrs[0])
	}
	if !strings.Contains(err.Error(), addrs[0]) {
		t.Errorf("error %q does not name the address %s", err, addrs[0])
	}
}

func TestEmbeddedRejectsBadAddress(t *testing.T) {
	if e, err := StartEmbedded("no-port", nil); err == nil {
		e.Close()
		t.Fatal(`StartEmbedded("no-port"): want an error`)
	}
}

func TestEmbeddedLogLevels(t *testing.T) {
	var buf bytes.Buffer
	l := kfakeLogger{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l.Logf(kfake.LogLevelError, "boom %d", 1)
	l.Logf(kfake.LogLevelWarn, "careful %d", 2)
	l.Logf(kfake.LogLevelInfo, "request %d", 3)
	l.Logf(kfake.LogLevelDebug, "noise %d", 4)
	// kfake's own timing of an EndTxn on a busy machine is no warning for the operator.
	l.Logf(kfake.LogLevelWarn, "txn: EndTxn slow pid=%d epoch=%d elapsed=%dms batches=%d groups=%d", 7, 0, 12, 5, 1)
	out := buf.String()
	for _, want := range []string{
		`level=ERROR msg="boom 1" component=embedded-broker`,
		`level=WARN msg="careful 2"`,
		`level=DEBUG msg="request 3"`,
		`level=DEBUG msg="txn: EndTxn slow pid=7 epoch=0 elapsed=12ms batches=5 groups=1"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "noise") {
		t.Errorf("kfake debug lines must be dropped:\n%s", out)
	}
}

func TestEmbeddedDoesNotAutoCreateTopics(t *testing.T) {
	e := startBroker(t)
	cfg := testConfig()
	cfg.Metadata.AllowAutoTopicCreation = true
	if _, err := PartitionCounts(e.Addrs(), cfg, []string{"never-created"}); err == nil {
		t.Fatal("PartitionCounts of a missing topic: want an error")
	}
	prod, err := NewProducer(e.Addrs(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if _, err := prod.PartitionsFor("never-created"); err == nil {
		t.Fatal("PartitionsFor a missing topic asking for auto-creation: want an error")
	}
}
