package conformance

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/stoatflow/stoatflow/pipeline"
)

// Difference is a documented difference between Kafka Streams and StoatFlow that a case
// shows. Apply checks that the two results differ the documented way and rewrites the
// differing part of one side so that Compare checks the rest.
type Difference struct {
	// Name is what docs/COMPATIBILITY.md calls it.
	Name  string
	Apply func(in Input, java, ours *Result) error
	// Unseen, when set, picks the input records that the case's windowed operator never
	// sees: StoatFlow's side also runs the input without them (Result.Unseen), for Apply.
	Unseen func(Step) bool
	// GlobalWatermark marks a difference that comes from closing windows on the global
	// watermark: a run in task time (Engine.TaskTime), which closes them on each task's own
	// time as Kafka Streams does, does not show it, and is compared without it.
	GlobalWatermark bool
}

// Compare returns nil when the two results of one run agree (after the case's documented
// differences), else what differs first: the case, the seed, the first differing record
// or store entry on both sides.
func Compare(c *Case, in Input, java, ours *Result) error {
	if err := compare(c, in, java, ours); err != nil {
		return fmt.Errorf("case %s seed %d: %w", c.Name, in.Seed, err)
	}
	return nil
}

func compare(c *Case, in Input, java, ours *Result) error {
	if java.Fatal != "" {
		return fmt.Errorf("the Java side failed: %s", java.Fatal)
	}
	if ours.Fatal != "" {
		return fmt.Errorf("StoatFlow failed: %s", ours.Fatal)
	}
	if ours.TaskTime && ours.WindowClosed != 0 {
		return fmt.Errorf("in task time StoatFlow dropped %d records as window-closed: only the watermark closes a window a record is not late for", ours.WindowClosed)
	}
	for _, d := range c.Differences {
		if ours.TaskTime && d.GlobalWatermark {
			continue
		}
		if err := d.Apply(in, java, ours); err != nil {
			return fmt.Errorf("documented difference %q: %w", d.Name, err)
		}
	}
	last := len(in.Steps) - 1
	if java.ErrorStep >= 0 {
		last = java.ErrorStep
	}
	if ours.ErrorStep >= 0 && ours.ErrorStep < last {
		last = ours.ErrorStep
	}
	for i := 0; i <= last; i++ {
		j, o := java.Outputs[i], ours.Outputs[i]
		for k := 0; k < max(len(j), len(o)); k++ {
			if k < len(j) && k < len(o) && sameRecord(j[k], o[k]) {
				continue
			}
			return fmt.Errorf("step %d (%s), output record %d differs:\n  Kafka Streams: %s\n  StoatFlow:     %s",
				i, fmtStep(in.Steps[i]), k, fmtRecordAt(j, k), fmtRecordAt(o, k))
		}
	}
	if java.ErrorStep != ours.ErrorStep {
		return fmt.Errorf("failing step (-1: none): Kafka Streams %d (%s), StoatFlow %d (%s)",
			java.ErrorStep, java.Error, ours.ErrorStep, ours.Error)
	}
	if err := compareStores(java.Stores, ours.Stores); err != nil {
		return err
	}
	if j, o := strings.TrimSpace(java.Describe), strings.TrimSpace(ours.Describe); j != o {
		return fmt.Errorf("describe() differs:\n--- Kafka Streams\n%s\n--- StoatFlow\n%s", j, o)
	}
	return nil
}

func compareStores(java, ours []Store) error {
	names := func(ss []Store) []string {
		var n []string
		for _, s := range ss {
			n = append(n, s.Name)
		}
		slices.Sort(n)
		return n
	}
	if j, o := names(java), names(ours); !slices.Equal(j, o) {
		return fmt.Errorf("the stores differ:\n  Kafka Streams: %v\n  StoatFlow:     %v", j, o)
	}
	byName := map[string]Store{}
	for _, s := range ours {
		byName[s.Name] = s
	}
	for _, j := range java {
		o := byName[j.Name]
		if j.Kind == "opaque" {
			// Kafka's suppression and join buffers cannot be listed: the name is all there is
			// to compare.
			continue
		}
		if j.Kind != o.Kind {
			return fmt.Errorf("store %s is a %s store in Kafka Streams, a %s store in StoatFlow", j.Name, j.Kind, o.Kind)
		}
		je, oe := sortedEntries(j.Entries), sortedEntries(o.Entries)
		for k := 0; k < max(len(je), len(oe)); k++ {
			if k < len(je) && k < len(oe) && sameEntry(je[k], oe[k]) {
				continue
			}
			return fmt.Errorf("store %s (%s), entry %d differs:\n  Kafka Streams: %s\n  StoatFlow:     %s",
				j.Name, j.Kind, k, fmtEntryAt(je, k), fmtEntryAt(oe, k))
		}
	}
	return nil
}

func sortedEntries(es []Entry) []Entry {
	es = slices.Clone(es)
	slices.SortStableFunc(es, func(a, b Entry) int {
		if c := bytes.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		if a.Start != b.Start {
			return cmpInt(a.Start, b.Start)
		}
		return cmpInt(a.End, b.End)
	})
	return es
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

func sameHeaders(a, b pipeline.Headers) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !sameBytes(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

func sameRecord(a, b Record) bool {
	return a.Topic == b.Topic && sameBytes(a.Key, b.Key) && sameBytes(a.Value, b.Value) &&
		a.Timestamp == b.Timestamp && sameHeaders(a.Headers, b.Headers)
}

func sameEntry(a, b Entry) bool {
	return sameBytes(a.Key, b.Key) && a.Start == b.Start && a.End == b.End && sameBytes(a.Value, b.Value) &&
		a.TS == b.TS && sameHeaders(a.Headers, b.Headers)
}

func fmtBytes(b []byte) string {
	if b == nil {
		return "null"
	}
	return strconv.Quote(string(b))
}

func fmtHeaders(hs pipeline.Headers) string {
	if len(hs) == 0 {
		return "[]"
	}
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.Key + "=" + fmtBytes(h.Value)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func fmtStep(s Step) string {
	if s.Topic == "" {
		return fmt.Sprintf("wall clock +%d ms", s.WallMs)
	}
	return fmt.Sprintf("input %s-%d key=%s value=%s ts=%d headers=%s", s.Topic, s.Partition, fmtBytes(s.Key), fmtBytes(s.Value), s.Timestamp, fmtHeaders(s.Headers))
}

func fmtRecordAt(rs []Record, k int) string {
	if k >= len(rs) {
		return "(none)"
	}
	r := rs[k]
	return fmt.Sprintf("%s key=%s value=%s ts=%d headers=%s", r.Topic, fmtBytes(r.Key), fmtBytes(r.Value), r.Timestamp, fmtHeaders(r.Headers))
}

func fmtEntryAt(es []Entry, k int) string {
	if k >= len(es) {
		return "(none)"
	}
	e := es[k]
	return fmt.Sprintf("key=%s start=%d end=%d value=%s ts=%d headers=%s", fmtBytes(e.Key), e.Start, e.End, fmtBytes(e.Value), e.TS, fmtHeaders(e.Headers))
}
