package conformance

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/stoatflow/stoatflow/luart"
	"github.com/stoatflow/stoatflow/pipeline"
)

// ApplicationID is the application.id of both sides: it names the internal topics that
// foreign-key join partitioners see.
const ApplicationID = "conformance"

// Engine options of StoatFlow's side.
type Engine struct {
	// CaseDir holds the cases' Lua scripts (NAME.lua).
	CaseDir string
	// Threads is num.stream.threads: above 1, the case's tasks run on that many workers,
	// each with a Lua runtime of its own, as an agent runs them (pipeline.NewWorkersDriver);
	// 0 and 1 run every task on the calling goroutine, as TopologyTestDriver does.
	Threads int
	// RepartitionTopics runs re-keyed records through their internal topics in bytes, as
	// the agents of a streams group do (pipeline.DriverOptions.RepartitionTopics).
	RepartitionTopics bool
	// TaskTime closes windows on each task's own time, as Kafka Streams does and the agents
	// of a streams group run (pipeline.DriverOptions.TaskTime), instead of on the global
	// watermark: the differences that come from the watermark do not apply.
	TaskTime bool
}

// Run runs one case on one input through StoatFlow's engine, the way `stoatflow test`
// does: the script loaded by luart, the topology run by pipeline.Driver on in-memory stores.
// A documented difference that needs it also gets the run without the records it picks.
func (e Engine) Run(c *Case, in Input) *Result {
	res := e.run(c, in)
	for _, d := range c.Differences {
		if d.Unseen == nil || (e.TaskTime && d.GlobalWatermark) {
			continue
		}
		res.Unseen = e.runWithout(c, in, d.Unseen)
		flushed := in
		flushed.Steps = append(slices.Clip(in.Steps), flushStep(in))
		res.Flushed = e.run(c, flushed)
		res.Unseen.Flushed = e.runWithout(c, flushed, d.Unseen)
	}
	return res
}

// runWithout runs the input without the records unseen picks; the result numbers its steps
// as in the whole input.
func (e Engine) runWithout(c *Case, in Input, unseen func(Step) bool) *Result {
	var kept []int // the whole input's step of each step kept
	seen := in
	seen.Steps = nil
	for i, s := range in.Steps {
		if s.Topic == "" || !unseen(s) {
			seen.Steps = append(seen.Steps, s)
			kept = append(kept, i)
		}
	}
	res := e.run(c, seen)
	outputs := map[int][]Record{}
	for step, rs := range res.Outputs {
		outputs[kept[step]] = rs
	}
	res.Outputs = outputs
	times := map[int]map[string]int64{}
	for step, st := range res.StoreTimes {
		times[kept[step]] = st
	}
	res.StoreTimes = times
	if res.ErrorStep >= 0 {
		res.ErrorStep = kept[res.ErrorStep]
	}
	return res
}

// flushStep is a record every operator of the cases with an Unseen difference sees (a key
// and a value of six letters), a second after the input's last timestamp, in the topic of
// its last record: it closes every window.
func flushStep(in Input) Step {
	last := Step{}
	var ts int64
	for _, s := range in.Steps {
		if s.Topic != "" {
			last, ts = s, max(ts, s.Timestamp)
		}
	}
	return Step{Topic: last.Topic, Partition: last.Partition, Key: []byte("~flush"), Value: []byte("~flush"), Timestamp: ts + 1000}
}

func (e Engine) run(c *Case, in Input) *Result {
	res := &Result{Case: in.Case, Seed: in.Seed, Outputs: map[int][]Record{}, ErrorStep: -1, StoreTimes: map[int]map[string]int64{}, TaskTime: e.TaskTime}
	var rts []*luart.Runtime
	var builders []*pipeline.StreamsBuilder
	defer func() {
		for _, rt := range rts {
			rt.Close()
		}
	}()
	for range max(e.Threads, 1) {
		rt, err := luart.New(luart.Options{
			DefaultKeySerde:   "string",
			DefaultValueSerde: "string",
			Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
			Stdout:            io.Discard,
		})
		if err != nil {
			res.Fatal = err.Error()
			return res
		}
		rts = append(rts, rt)
		b, err := rt.LoadScripts([]string{filepath.Join(e.CaseDir, c.Name+".lua")})
		if err != nil {
			res.Fatal = "load: " + err.Error()
			return res
		}
		builders = append(builders, b)
	}
	b := builders[0]
	res.Describe = b.Describe().String()
	stores := pipeline.NewMemoryStores()
	var windowClosed atomic.Int64
	opts := pipeline.DriverOptions{Stores: stores, ApplicationID: ApplicationID,
		ExceptionHandlers: c.Handlers, Sensors: dropCounter{&windowClosed}, RepartitionTopics: e.RepartitionTopics,
		TaskTime: e.TaskTime}
	var d *pipeline.Driver
	var err error
	if len(builders) > 1 {
		d, err = pipeline.NewWorkersDriver(builders, opts)
	} else {
		d, err = pipeline.NewDriver(b, opts)
	}
	if err != nil {
		res.Fatal = "build: " + err.Error()
		return res
	}
	defer d.Close()
	defer func() { res.WindowClosed = int(windowClosed.Load()) }()
	for _, rt := range rts {
		rt.SetClock(d.WallClock)
	}
	for i, s := range in.Steps {
		if s.Topic == "" {
			err = d.AdvanceWallClock(s.WallMs)
		} else {
			err = d.PipeTo(s.Topic, s.Partition, s.Key, s.Value, s.Timestamp, s.Headers)
		}
		if written := d.ReadInternal(); len(written) > 0 {
			// Kafka's side reads them topic by topic in name order.
			slices.SortStableFunc(written, func(a, b pipeline.OutputRecord) int { return strings.Compare(a.Topic, b.Topic) })
			if res.Internal == nil {
				res.Internal = map[int][]Record{}
			}
			for _, r := range written {
				res.Internal[i] = append(res.Internal[i], Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp, Headers: r.Headers})
			}
		}
		for _, t := range d.OutputTopics() {
			for r, ok := d.ReadOutput(t); ok; r, ok = d.ReadOutput(t) {
				res.Outputs[i] = append(res.Outputs[i], Record{Topic: t, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp, Headers: r.Headers})
			}
		}
		for _, spec := range b.Stores() {
			if st, ok := stores.StreamTime(spec.Name, 0); ok {
				if res.StoreTimes[i] == nil {
					res.StoreTimes[i] = map[string]int64{}
				}
				res.StoreTimes[i][spec.Name] = st
			}
		}
		if err != nil {
			res.ErrorStep, res.Error = i, err.Error()
			break
		}
	}
	for _, spec := range b.Stores() {
		st, err := dumpStore(stores, spec, in)
		if err != nil {
			res.Fatal = fmt.Sprintf("store %s: %v", spec.Name, err)
			return res
		}
		res.Stores = append(res.Stores, st)
	}
	return res
}

// dumpStore lists partition 0 of a store (TopologyTestDriver has one partition per topic,
// so one task) from the engine's in-memory stores or an agent's state database.
func dumpStore(m pipeline.StoreProvider, spec pipeline.StoreSpec, in Input) (Store, error) {
	st := Store{Name: spec.Name}
	switch spec.Type {
	case pipeline.KeyValueStoreType, pipeline.TimestampedKeyValueStoreType:
		st.Kind = "kv"
		if spec.Type == pipeline.TimestampedKeyValueStoreType {
			st.Kind = "tkv"
			if spec.Headers {
				st.Kind = "hkv"
			}
		}
		s, err := m.KeyValueStore(spec, 0)
		if err != nil {
			return st, err
		}
		it := s.Range(nil, nil, false)
		defer it.Close()
		for it.Next() {
			hs, err := it.Headers()
			if err != nil {
				return st, err
			}
			st.Entries = append(st.Entries, Entry{Key: clone(it.Key()), Value: clone(it.Value()), TS: it.Timestamp(), Headers: cloneHeaders(hs)})
		}
		return st, it.Err()
	case pipeline.WindowStoreType, pipeline.TimestampedWindowStoreType:
		st.Kind = "win"
		if spec.Type == pipeline.TimestampedWindowStoreType {
			st.Kind = "twin"
			if spec.Headers {
				st.Kind = "hwin"
			}
		}
		s, err := m.WindowStore(spec, 0)
		if err != nil {
			return st, err
		}
		it := s.FetchRange(nil, nil, math.MinInt64, math.MaxInt64, false)
		defer it.Close()
		for it.Next() {
			hs, err := it.Headers()
			if err != nil {
				return st, err
			}
			ts := it.Timestamp()
			if spec.Type == pipeline.WindowStoreType {
				ts = -1
			}
			st.Entries = append(st.Entries, Entry{Key: clone(it.Key()), Start: it.Start(), End: it.Start() + spec.WindowSize,
				Value: clone(it.Value()), TS: ts, Headers: cloneHeaders(hs)})
		}
		return st, it.Err()
	case pipeline.SessionStoreType:
		st.Kind = "ses"
		s, err := m.SessionStore(spec, 0)
		if err != nil {
			return st, err
		}
		it := s.FindSessionsRange(nil, nil, 0, math.MaxInt64, false)
		defer it.Close()
		for it.Next() {
			st.Entries = append(st.Entries, Entry{Key: clone(it.Key()), Start: it.Start(), End: it.End(), Value: clone(it.Value()), TS: -1})
		}
		return st, it.Err()
	case pipeline.VersionedKeyValueStoreType:
		st.Kind = "ver"
		s, err := m.VersionedStore(spec, 0)
		if err != nil {
			return st, err
		}
		for _, k := range in.ProbeKeys {
			v, ok, err := s.Get(k)
			if err != nil {
				return st, err
			}
			if ok {
				st.Entries = append(st.Entries, Entry{Key: k, Start: -1, Value: clone(v.Value), TS: v.Timestamp})
			}
			for _, t := range in.ProbeTimes {
				v, ok, err := s.GetAsOf(k, t)
				if err != nil {
					return st, err
				}
				if ok {
					st.Entries = append(st.Entries, Entry{Key: k, Start: t, Value: clone(v.Value), TS: v.Timestamp})
				}
			}
		}
		return st, nil
	}
	return st, fmt.Errorf("unknown store type %v", spec.Type)
}

// cloneHeaders copies headers an iterator hands out, valid only until its next step.
func cloneHeaders(hs pipeline.Headers) pipeline.Headers {
	if hs == nil {
		return nil
	}
	out := make(pipeline.Headers, len(hs))
	for i, h := range hs {
		out[i] = pipeline.Header{Key: h.Key, Value: clone(h.Value)}
	}
	return out
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// dropCounter counts the records dropped with reason window-closed, by any worker; it
// measures nothing else.
type dropCounter struct{ windowClosed *atomic.Int64 }

type counter func()

func (c counter) Inc() { c() }

type noObserver struct{}

func (noObserver) Observe(float64) {}

func (dropCounter) Processed(string) pipeline.Counter { return counter(func() {}) }

func (d dropCounter) Dropped(_ string, reason pipeline.DropReason) pipeline.Counter {
	if reason != pipeline.DropWindowClosed {
		return counter(func() {})
	}
	return counter(func() { d.windowClosed.Add(1) })
}

func (dropCounter) EndToEnd(string) pipeline.Observer             { return noObserver{} }
func (dropCounter) Punctuation(string) pipeline.Observer          { return noObserver{} }
func (dropCounter) StoreLatency(string, string) pipeline.Observer { return noObserver{} }
func (dropCounter) TaskProcessed(string) pipeline.Counter         { return counter(func() {}) }
