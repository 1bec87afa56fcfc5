// Package conformance checks StoatFlow against Kafka Streams 4.4: each case is one topology
// written in Java (conformance/java, run in TopologyTestDriver) and in Lua
// (conformance/cases/NAME.lua, run by the engine), fed the same generated input; the outputs,
// the stores' contents and describe() must agree (conformance/README.md).
package conformance

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Step is one input event: a record piped into a topic, or (Topic == "") a wall-clock
// advance of WallMs.
type Step struct {
	Topic     string
	Partition int32
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   pipeline.Headers
	WallMs    int64
}

// Input is one run: a case on one seed's input. ProbeKeys and ProbeTimes are the keys and
// times versioned stores are read at (they cannot be listed). TopicPrefix prefixes the names
// of the case's topics (a run on a shared broker); the steps name them whole.
type Input struct {
	Case        string
	Seed        int64
	TopicPrefix string
	Steps       []Step
	ProbeKeys   [][]byte
	ProbeTimes  []int64
}

// Record is an output record.
type Record struct {
	Topic     string
	Key       []byte
	Value     []byte
	Timestamp int64
	Headers   pipeline.Headers
}

// Entry is one entry of a store: Start and End are the window (window and session stores)
// or, for versioned stores, Start the time read as of (-1: the latest version); TS is -1
// where the store keeps none.
type Entry struct {
	Key        []byte
	Start, End int64
	Value      []byte
	TS         int64
	Headers    pipeline.Headers
}

// Store is a state store's kind (kv, tkv, hkv, win, twin, hwin, ses, ver, opaque) and
// entries.
type Store struct {
	Name, Kind string
	Entries    []Entry
}

// Result is what a run gave: the records each step produced, the step that failed (-1:
// none) and why, the stores at the end and the topology's description. Fatal is an error of
// the harness, not of the topology.
type Result struct {
	Case     string
	Seed     int64
	Describe string
	Outputs  map[int][]Record
	// Internal are the records each step wrote to the repartition and foreign-key join
	// topics, topic by topic in name order: Kafka Streams' always, StoatFlow's when it
	// writes them (Engine.RepartitionTopics).
	Internal  map[int][]Record
	ErrorStep int
	Error     string
	Stores    []Store
	Fatal     string
	// WindowClosed counts the records StoatFlow dropped with reason window-closed.
	WindowClosed int
	// StoreTimes are, after each step, the stream time of StoatFlow's window and session
	// stores (the largest window start or session end put), by store name.
	StoreTimes map[int]map[string]int64
	// Unseen is StoatFlow's run of the input without the records a difference's Unseen
	// picks, its steps numbered as in the whole input.
	Unseen *Result
	// Flushed is the same run with a last record appended that every operator sees, far
	// in the future, so that every window closes (differences with Unseen).
	Flushed *Result
	// TaskTime: StoatFlow ran in task time (Engine.TaskTime).
	TaskTime bool
}

func encBytes(b []byte) string {
	if b == nil {
		return "-"
	}
	return "b" + base64.StdEncoding.EncodeToString(b)
}

func decBytes(s string) ([]byte, error) {
	if s == "-" {
		return nil, nil
	}
	if !strings.HasPrefix(s, "b") {
		return nil, fmt.Errorf("bad bytes field %q", s)
	}
	b, err := base64.StdEncoding.DecodeString(s[1:])
	if b == nil && err == nil {
		b = []byte{}
	}
	return b, err
}

func encText(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func decText(s string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	return string(b), err
}

func encHeaders(hs pipeline.Headers) string {
	if len(hs) == 0 {
		return "-"
	}
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = encText(h.Key) + ":" + encBytes(h.Value)
	}
	return strings.Join(parts, ",")
}

func decHeaders(s string) (pipeline.Headers, error) {
	if s == "-" {
		return nil, nil
	}
	var hs pipeline.Headers
	for _, pair := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(pair, ":")
		if !ok {
			return nil, fmt.Errorf("bad header %q", pair)
		}
		n, err := decText(name)
		if err != nil {
			return nil, err
		}
		v, err := decBytes(value)
		if err != nil {
			return nil, err
		}
		hs = append(hs, pipeline.Header{Key: n, Value: v})
	}
	return hs, nil
}

// WriteInputs writes runs in the format conformance/java's Main reads.
func WriteInputs(w io.Writer, ins []Input) error {
	bw := bufio.NewWriter(w)
	for _, in := range ins {
		fmt.Fprintf(bw, "case %s %d\n", in.Case, in.Seed)
		if in.TopicPrefix != "" {
			fmt.Fprintf(bw, "prefix %s\n", in.TopicPrefix)
		}
		for _, s := range in.Steps {
			if s.Topic == "" {
				fmt.Fprintf(bw, "wall %d\n", s.WallMs)
				continue
			}
			fmt.Fprintf(bw, "in %s %d %d %s %s %s\n", s.Topic, s.Partition, s.Timestamp, encBytes(s.Key), encBytes(s.Value), encHeaders(s.Headers))
		}
		for _, k := range in.ProbeKeys {
			fmt.Fprintf(bw, "probekey %s\n", encBytes(k))
		}
		for _, t := range in.ProbeTimes {
			fmt.Fprintf(bw, "probetime %d\n", t)
		}
		fmt.Fprintln(bw, "end")
	}
	return bw.Flush()
}

// ReadResults reads what conformance/java's Main wrote.
func ReadResults(r io.Reader) ([]*Result, error) {
	var (
		out  []*Result
		cur  *Result
		step int
		line int
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line++
		f := strings.Split(sc.Text(), " ")
		err := func() error {
			if f[0] != "case" && cur == nil {
				return fmt.Errorf("%q before a case line", f[0])
			}
			switch f[0] {
			case "case":
				seed, err := strconv.ParseInt(f[2], 10, 64)
				cur = &Result{Case: f[1], Seed: seed, Outputs: map[int][]Record{}, ErrorStep: -1}
				return err
			case "describe":
				var err error
				cur.Describe, err = decText(f[1])
				return err
			case "step":
				var err error
				step, err = strconv.Atoi(f[1])
				return err
			case "out":
				rec, err := decRecord(f)
				cur.Outputs[step] = append(cur.Outputs[step], rec)
				return err
			case "internal":
				rec, err := decRecord(f)
				if cur.Internal == nil {
					cur.Internal = map[int][]Record{}
				}
				cur.Internal[step] = append(cur.Internal[step], rec)
				return err
			case "error":
				var err error
				if cur.ErrorStep, err = strconv.Atoi(f[1]); err != nil {
					return err
				}
				cur.Error, err = decText(f[2])
				return err
			case "fatal":
				var err error
				cur.Fatal, err = decText(f[1])
				return err
			case "store":
				cur.Stores = append(cur.Stores, Store{Name: f[1], Kind: f[2]})
				return nil
			case "e":
				e, err := decEntry(f)
				s := &cur.Stores[len(cur.Stores)-1]
				s.Entries = append(s.Entries, e)
				return err
			case "end":
				out = append(out, cur)
				cur = nil
				return nil
			}
			return fmt.Errorf("unknown line kind %q", f[0])
		}()
		if err != nil {
			return nil, fmt.Errorf("results line %d: %w", line, err)
		}
	}
	return out, sc.Err()
}

func decRecord(f []string) (Record, error) {
	if len(f) != 6 {
		return Record{}, fmt.Errorf("an out line has 6 fields, not %d", len(f))
	}
	var r Record
	var err error
	r.Topic = f[1]
	if r.Key, err = decBytes(f[2]); err != nil {
		return r, err
	}
	if r.Value, err = decBytes(f[3]); err != nil {
		return r, err
	}
	if r.Timestamp, err = strconv.ParseInt(f[4], 10, 64); err != nil {
		return r, err
	}
	r.Headers, err = decHeaders(f[5])
	return r, err
}

func decEntry(f []string) (Entry, error) {
	if len(f) != 7 {
		return Entry{}, fmt.Errorf("an e line has 7 fields, not %d", len(f))
	}
	var e Entry
	var err error
	if e.Key, err = decBytes(f[1]); err != nil {
		return e, err
	}
	if e.Start, err = strconv.ParseInt(f[2], 10, 64); err != nil {
		return e, err
	}
	if e.End, err = strconv.ParseInt(f[3], 10, 64); err != nil {
		return e, err
	}
	if e.Value, err = decBytes(f[4]); err != nil {
		return e, err
	}
	if e.TS, err = strconv.ParseInt(f[5], 10, 64); err != nil {
		return e, err
	}
	e.Headers, err = decHeaders(f[6])
	return e, err
}

// clone copies r deep enough for a documented difference's Apply, which rewrites records,
// store entries and describe() of a result: the same Kafka Streams result is compared with
// each of StoatFlow's runs (one per thread count).
func (r *Result) clone() *Result {
	if r == nil {
		return nil
	}
	c := *r
	c.Outputs = make(map[int][]Record, len(r.Outputs))
	for step, rs := range r.Outputs {
		c.Outputs[step] = slices.Clone(rs)
	}
	c.Stores = slices.Clone(r.Stores)
	for i := range c.Stores {
		c.Stores[i].Entries = slices.Clone(c.Stores[i].Entries)
	}
	c.StoreTimes = maps.Clone(r.StoreTimes)
	c.Unseen, c.Flushed = r.Unseen.clone(), r.Flushed.clone()
	return &c
}
