package main

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var letters = regexp.MustCompile(`[A-Za-z]+`)

func TestVocabularyIsDistinctWordsOfLetters(t *testing.T) {
	for _, c := range []struct{ n, minLen, maxLen int }{{vocabSize, 4, 10}, {millionKeys, 6, 12}} {
		words := vocabulary(c.n)
		seen := make(map[string]bool, c.n)
		long := 0
		for i, w := range words {
			if seen[w] {
				t.Fatalf("%d words: word %d %q repeats", c.n, i, w)
			}
			seen[w] = true
			if strings.IndexFunc(w, func(r rune) bool { return r < 'a' || r > 'z' }) >= 0 {
				t.Fatalf("%d words: word %d %q is not letters only", c.n, i, w)
			}
			if len(w) < c.minLen || len(w) > c.maxLen {
				t.Fatalf("%d words: word %d %q: length %d, want %d..%d", c.n, i, w, len(w), c.minLen, c.maxLen)
			}
			if len(w) > 4 {
				long++
			}
		}
		// The stateless filter keeps the words longer than four letters: most of them.
		if c.n == vocabSize && long != vocabSize*3/4 {
			t.Fatalf("%d words longer than 4 letters, want %d", long, vocabSize*3/4)
		}
	}
}

func TestLineHoldsItsWordOnlyAndHasLineBytes(t *testing.T) {
	for i, w := range []string{"baba", "zuzuxoxo", "lowebolowe"} {
		l := line(w, 123456+i, 1_700_000_000_000)
		if len(l) != lineBytes {
			t.Fatalf("line %q: %d bytes, want %d", l, len(l), lineBytes)
		}
		if got := letters.FindAllString(string(l), -1); len(got) != 1 || got[0] != w {
			t.Fatalf("line %q: words %q, want only %q", l, got, w)
		}
	}
}

func TestGeneratorRepeatsItsSequence(t *testing.T) {
	a, b := newGenerator(0), newGenerator(0)
	for i := range 1000 {
		ka, va, _ := a.record(int64(i))
		kb, vb, _ := b.record(int64(i))
		if ka != kb || string(va) != string(vb) {
			t.Fatalf("record %d differs: %s=%s vs %s=%s", i, ka, va, kb, vb)
		}
	}
}

// A feeder's close waits for the records sarama is still retrying: here the broker cuts the
// connection that carries the first produce request, as a busy machine can make a
// connection fail, and close comes before the retry. Closing the producer first would fail
// them with sarama's ErrShuttingDown.
func TestFeederCloseDeliversRetriedRecords(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, inputTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.ControlKey(kmsg.Produce.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		return nil, errors.New("connection cut by the test"), true
	})
	f, err := newFeeder(c.ListenAddrs())
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	gen := newGenerator(0)
	for range n {
		ts := time.Now().UnixMilli()
		key, value, err := gen.record(ts)
		if err == nil {
			err = f.send(key, value, ts)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := f.close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	client, err := sarama.NewClient(c.ListenAddrs(), producerConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var stored int64
	for p := range int32(partitions) {
		end, err := client.GetOffset(inputTopic, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatal(err)
		}
		stored += end
	}
	if stored != n {
		t.Fatalf("%d of %d records stored", stored, n)
	}
}
