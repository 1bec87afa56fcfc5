package main

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// countsWords says whether the scenario's output is a word count's every update with long
// values (the agent's and Kafka Streams'; goka writes its counts as decimal strings), which
// -verify checks.
func (s scenario) countsWords() bool { return s.script == "wordcount.lua" && s.goka == "" }

// countCheck is -verify's check of a word count run: read read_committed, every word's
// updates are the counts 1, 2, …, n, each once, where n is the word's records in the input,
// and there is no other word. A nil check checks nothing.
type countCheck struct {
	want map[string]int64 // records per word in the input, every phase
	got  *countTally
}

func newCountCheck(on bool) *countCheck {
	if !on {
		return nil
	}
	return &countCheck{want: map[string]int64{}, got: &countTally{keys: map[string]*keyCounts{}}}
}

// wrap has o count every input word too.
func (c *countCheck) wrap(o outputCounter) outputCounter {
	if c == nil {
		return o
	}
	return &countingInput{outputCounter: o, want: c.want}
}

// tally is what the watcher fills, nil when nothing is checked.
func (c *countCheck) tally() *countTally {
	if c == nil {
		return nil
	}
	return c.got
}

// verify compares the output read so far with the input.
func (c *countCheck) verify() error {
	if c == nil {
		return nil
	}
	c.got.mu.Lock()
	defer c.got.mu.Unlock()
	if c.got.bad != nil {
		return c.got.bad
	}
	var wrong []string
	for _, word := range slices.Sorted(maps.Keys(c.want)) {
		n, g := c.want[word], c.got.keys[word]
		if g == nil {
			g = &keyCounts{}
		}
		if g.n != n || g.max != n || g.sum != n*(n+1)/2 {
			wrong = append(wrong, fmt.Sprintf("%q: %d in the input, %d updates up to %d (sum %d, want %d)", word, n, g.n, g.max, g.sum, n*(n+1)/2))
		}
	}
	for _, word := range slices.Sorted(maps.Keys(c.got.keys)) {
		if _, ok := c.want[word]; !ok {
			wrong = append(wrong, fmt.Sprintf("%q: not in the input, %d updates", word, c.got.keys[word].n))
		}
	}
	if len(wrong) > 0 {
		return fmt.Errorf("-verify: %d of %d words counted wrong, read read_committed: %s", len(wrong), len(c.want), strings.Join(wrong[:min(len(wrong), 5)], "; "))
	}
	return nil
}

// countingInput is an outputCounter that also counts the input's words.
type countingInput struct {
	outputCounter
	want map[string]int64
}

func (ci *countingInput) add(key string, ts int64) {
	ci.want[key]++
	ci.outputCounter.add(key, ts)
}

// countTally is what the watcher read of a word count's output, word by word.
type countTally struct {
	mu   sync.Mutex
	keys map[string]*keyCounts
	bad  error // the first value that is not a count
}

// keyCounts are a word's updates: how many, the greatest, their sum.
type keyCounts struct{ n, max, sum int64 }

func (t *countTally) add(key, value []byte, partition int32, offset int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(value) != 8 {
		if t.bad == nil {
			t.bad = fmt.Errorf("-verify: %s-%d@%d: a %d-byte value, not a count (a long's 8 bytes)", outputTopic, partition, offset, len(value))
		}
		return
	}
	v := int64(binary.BigEndian.Uint64(value))
	k := t.keys[string(key)]
	if k == nil {
		k = &keyCounts{}
		t.keys[string(key)] = k
	}
	k.n++
	k.max = max(k.max, v)
	k.sum += v
}
