package conformance

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Gen makes the bytes of a generated key or value (nil: null).
type Gen func(r randSource) []byte

// randSource is the generator's random source.
type randSource = *rand.Rand

// Topic is an input topic of a case and what the generator writes to it.
type Topic struct {
	Name       string
	Key, Value Gen
	// Weight is the topic's share of the records (default 1).
	Weight int
}

// oneOf picks one of the strings, or null with probability pNull.
func oneOf(pNull float64, choices ...string) Gen {
	return func(r randSource) []byte {
		if r.Float64() < pNull {
			return nil
		}
		return []byte(choices[r.IntN(len(choices))])
	}
}

// longIn is a big-endian 8-byte long in [lo, hi], or null with probability pNull.
func longIn(pNull float64, lo, hi int64) Gen {
	return func(r randSource) []byte {
		if r.Float64() < pNull {
			return nil
		}
		return binary.BigEndian.AppendUint64(nil, uint64(lo+r.Int64N(hi-lo+1)))
	}
}

// words is a few words from a small vocabulary, in mixed case and separated by spaces and
// punctuation, or null with probability pNull.
func words(pNull float64) Gen {
	vocab := []string{"the", "Fox", "jumps", "over", "LAZY", "dog", "fox", "a"}
	seps := []string{" ", "  ", ", ", "-"}
	return func(r randSource) []byte {
		if r.Float64() < pNull {
			return nil
		}
		var b []byte
		for i, n := 0, r.IntN(5); i < n; i++ {
			if i > 0 {
				b = append(b, seps[r.IntN(len(seps))]...)
			}
			b = append(b, vocab[r.IntN(len(vocab))]...)
		}
		return b
	}
}

// pair is "left|right", each part from its Gen (a null part is empty), or null with
// probability pNull: the values of foreign-key join cases.
func pair(pNull float64, left, right Gen) Gen {
	return func(r randSource) []byte {
		if r.Float64() < pNull {
			return nil
		}
		return append(append(left(r), '|'), right(r)...)
	}
}

// keys are the record keys of most cases: few, so that they repeat.
var keys = oneOf(0.1, "a", "b", "c", "d", "e")

// Generate makes a case's input for seed: Records records spread over its topics by
// weight, timestamps mostly rising with some going back (out of order, some late for the
// windows the cases use), headers on some, and wall-clock advances mixed in where the case
// wants them. TopologyTestDriver has one partition per topic, so every record goes to
// partition 0; several topics stand in for several partitions.
func Generate(c *Case, seed int64) Input {
	in := Input{Case: c.Name, Seed: seed}
	if c.Fixed != nil {
		in.Steps = c.Fixed
	} else {
		r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
		n := c.Records
		if n == 0 {
			n = 40
		}
		total := 0
		for _, t := range c.Inputs {
			total += max(t.Weight, 1)
		}
		ts := int64(r.IntN(100))
		for range n {
			if c.Wall && r.IntN(5) == 0 {
				in.Steps = append(in.Steps, Step{WallMs: int64(r.IntN(2000))})
			}
			pick := r.IntN(total)
			t := c.Inputs[0]
			for _, cand := range c.Inputs {
				if pick -= max(cand.Weight, 1); pick < 0 {
					t = cand
					break
				}
			}
			if r.IntN(5) == 0 {
				ts = max(0, ts-int64(r.IntN(150)))
			} else {
				ts += int64(r.IntN(60))
			}
			in.Steps = append(in.Steps, Step{Topic: t.Name, Timestamp: ts, Key: t.Key(r), Value: t.Value(r), Headers: headers(r)})
		}
	}
	seen := map[string]bool{}
	var times []int64
	for _, s := range in.Steps {
		if s.Topic == "" {
			continue
		}
		if s.Key != nil && !seen[string(s.Key)] {
			seen[string(s.Key)] = true
			in.ProbeKeys = append(in.ProbeKeys, s.Key)
		}
		times = append(times, s.Timestamp)
	}
	for _, k := range c.ProbeKeys {
		if !seen[k] {
			seen[k] = true
			in.ProbeKeys = append(in.ProbeKeys, []byte(k))
		}
	}
	times = append(times, c.ProbeTimes...)
	slices.Sort(times)
	in.ProbeTimes = slices.Compact(times)
	return in
}

// headers are none most of the time, else one or two, a name repeated or a null value now
// and then.
func headers(r *rand.Rand) pipeline.Headers {
	switch r.IntN(6) {
	case 0:
		return pipeline.Headers{{Key: "h", Value: []byte{byte('0' + r.IntN(3))}}}
	case 1:
		return pipeline.Headers{{Key: "h", Value: []byte("x")}, {Key: "trace", Value: nil}, {Key: "h", Value: []byte("y")}}
	}
	return nil
}
