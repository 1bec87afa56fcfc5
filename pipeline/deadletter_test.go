package pipeline

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCapErrorHeader(t *testing.T) {
	short := "p.lua:3: short"
	if got := string(capErrorHeader(short)); got != short {
		t.Fatalf("capErrorHeader(%q) = %q", short, got)
	}
	long := strings.Repeat("é", MaxErrorHeaderBytes) // 2 bytes each
	got := capErrorHeader(long)
	if len(got) > MaxErrorHeaderBytes || !utf8.Valid(got) || !strings.HasSuffix(string(got), fmt.Sprintf(" ... [cut from %d bytes]", len(long))) {
		t.Fatalf("capErrorHeader: %d bytes, valid UTF-8 %v, ending %q", len(got), utf8.Valid(got), got[len(got)-30:])
	}
}

// pickySerde refuses to deserialize "bad".
type pickySerde struct{ bytesSerde }

func (pickySerde) Deserialize(topic string, h Headers, b []byte) (any, error) {
	if string(b) == "bad" {
		return nil, errors.New("not a value")
	}
	return bytesSerde{}.Deserialize(topic, h, b)
}

// handlersDriver maps values of topic in to upper case, failing on "boom", to topic out.
func handlersDriver(t *testing.T, h ExceptionHandlers) *Driver {
	t.Helper()
	b := newTestBuilder()
	s, err := b.Stream([]string{"in"}, Consumed{Serdes: Serdes{Value: pickySerde{}}})
	if err != nil {
		t.Fatal(err)
	}
	up, err := s.MapValues(func(rec Record) (any, error) {
		if rec.Value == "boom" {
			return nil, errors.New("boom")
		}
		return strings.ToUpper(rec.Value.(string)), nil
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := up.To("out", Produced{Serdes: Serdes{Value: bytesSerde{}}}); err != nil {
		t.Fatal(err)
	}
	d, err := NewDriver(b, DriverOptions{ApplicationID: "app", ExceptionHandlers: h})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The driver applies the exception handlers as the agent does: LogAndContinue skips the
// record, LogAndFail (the default) fails the Pipe call, and with a dead-letter topic either
// writes the record there first, as Kafka Streams 4.2+ writes it.
func TestDriverExceptionHandlers(t *testing.T) {
	in := Headers{{Key: "h", Value: []byte("x")}, {Key: "h", Value: nil}}
	for _, c := range []struct {
		name     string
		h        ExceptionHandlers
		value    string
		fails    bool
		letter   string // the dead letter's exception, "" for none
		errorMsg string
	}{
		{"processing, LogAndFail", ExceptionHandlers{}, "boom", true, "", ""},
		{"processing, LogAndContinue", ExceptionHandlers{ContinueOnProcessingError: true}, "boom", false, "", ""},
		{"processing, LogAndFail, dead letter", ExceptionHandlers{DeadLetterQueueTopic: "dlq"}, "boom", true, ExceptionProcessing, "processor KSTREAM-MAPVALUES-0000000001: boom"},
		{"processing, LogAndContinue, dead letter", ExceptionHandlers{ContinueOnProcessingError: true, DeadLetterQueueTopic: "dlq"}, "boom", false, ExceptionProcessing, "processor KSTREAM-MAPVALUES-0000000001: boom"},
		{"deserialization, LogAndFail", ExceptionHandlers{ContinueOnProcessingError: true}, "bad", true, "", ""},
		{"deserialization, LogAndContinue, dead letter", ExceptionHandlers{ContinueOnDeserializationError: true, DeadLetterQueueTopic: "dlq"}, "bad", false, ExceptionDeserialization, "cannot deserialize value: not a value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := handlersDriver(t, c.h)
			if err := d.Pipe("in", []byte("k"), []byte("ok"), 5, nil); err != nil {
				t.Fatal(err)
			}
			err := d.Pipe("in", []byte("k"), []byte(c.value), 7, in)
			if (err != nil) != c.fails {
				t.Fatalf("Pipe: %v, want failing %v", err, c.fails)
			}
			if err == nil {
				// The skipped record took nothing with it: the next one goes on.
				if err := d.Pipe("in", []byte("k"), []byte("next"), 9, nil); err != nil {
					t.Fatal(err)
				}
			}
			var outs []string
			for r, ok := d.ReadOutput("out"); ok; r, ok = d.ReadOutput("out") {
				outs = append(outs, string(r.Value))
			}
			if want := map[bool]string{true: "OK", false: "OK NEXT"}[c.fails]; strings.Join(outs, " ") != want {
				t.Fatalf("out: %q, want %q", outs, want)
			}
			r, ok := d.ReadOutput("dlq")
			if c.letter == "" {
				if ok {
					t.Fatalf("a dead letter without a dead-letter topic: %+v", r)
				}
				return
			}
			if !ok {
				t.Fatal("no dead letter")
			}
			var hs []string
			for _, h := range r.Headers {
				hs = append(hs, fmt.Sprintf("%s=%q", h.Key, h.Value))
			}
			want := []string{`h="x"`, `h=""`, fmt.Sprintf("%s=%q", HeaderErrorsException, c.letter),
				fmt.Sprintf("%s=%q", HeaderErrorsMessage, c.errorMsg), fmt.Sprintf("%s=%q", HeaderErrorsStacktrace, "in-0@1: "+c.errorMsg),
				HeaderErrorsTopic + `="in"`, HeaderErrorsPartition + `="0"`, HeaderErrorsOffset + `="1"`}
			if string(r.Key) != "k" || string(r.Value) != c.value || r.Timestamp != 7 || strings.Join(hs, " ") != strings.Join(want, " ") {
				t.Fatalf("dead letter %q=%q@%d %s, want k=%q@7 %s", r.Key, r.Value, r.Timestamp, hs, c.value, want)
			}
			if r.Headers[1].Value != nil {
				t.Fatal("a null header value became empty")
			}
		})
	}
}
