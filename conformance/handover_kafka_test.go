//go:build kafka

package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/test/kafka/kafkatest"
)

// A handover moves an application between Kafka Streams 4.4 and StoatFlow on a real broker:
// one of them processes the first half of the input under exactly_once_v2 and stops (or is
// killed), the other, with the same application.id, restores the stores from the changelogs
// the first wrote and processes the rest. The output topics and the final stores must be
// those of one uninterrupted run: TopologyTestDriver's on the whole input.
type handoverCase struct {
	// name is the conformance case: conformance/java's topology and cases/NAME.lua.
	name string
	// outputs are the topics the case writes.
	outputs []string
	// groups are the input topics, in the order each half of the input is produced: a group
	// is produced and processed before the next is produced. Kafka Streams picks the next
	// record of a task by timestamp, StoatFlow takes the records as they are fetched; with
	// one group at a time both process a two-topic case in the order TopologyTestDriver is
	// given.
	groups [][]string
	// latest compares only each key's latest output: Kafka Streams' foreign-key join goes
	// through topics, so a row updated again before the other table's answer came back
	// has its first answer dropped (the answer names a value the row no longer has),
	// where TopologyTestDriver, which runs each record through to the end, emits both.
	latest bool
	// refused names the store a handover from Kafka Streams to StoatFlow is refused for: its
	// changelog is laid out StoatFlow's own way (docs/scaling.md). Only that direction runs,
	// after a clean stop; the agent must stop at once with an error naming the store.
	refused string
}

var handoverCases = []handoverCase{
	{name: "wordcount", outputs: []string{"word-counts"}, groups: [][]string{{"text-lines"}}},
	{name: "suppress_window_close", outputs: []string{"out"}, groups: [][]string{{"in"}}},
	{name: "stream_table_join", outputs: []string{"out"}, groups: [][]string{{"users"}, {"orders"}}},
	{name: "fk_join", outputs: []string{"out"}, groups: [][]string{{"customers"}, {"orders"}}, latest: true},
	{name: "table_groupby_count", outputs: []string{"out"}, groups: [][]string{{"in"}}},
	{name: "stream_stream_left_join", outputs: []string{"out"}, groups: [][]string{{"left", "right"}}, refused: "KSTREAM-OUTERSHARED-0000000004-store"},
}

// handoverRecords is the input size of a handover: enough for every window, join and key to
// be updated on both sides of the handover, few enough to keep the test quick.
const handoverRecords = 160

// handover is one run: a case, which side goes first, and how it stops.
type handover struct {
	hc     handoverCase
	first  string // "ks" or "sf"
	kill   bool
	prefix string // of the topic names
	appID  string
	in     Input
	// halves are the input's two halves, each as its groups' steps.
	halves [2][][]Step
}

func (h *handover) name() string {
	stop := "clean"
	if h.kill {
		stop = "kill"
	}
	second := map[string]string{"ks": "sf", "sf": "ks"}[h.first]
	return fmt.Sprintf("%s/%s-%s-%s", h.hc.name, h.first, second, stop)
}

// TestKafkaHandover hands each case over from Kafka Streams to StoatFlow and back, after a
// clean stop and after a SIGKILL.
func TestKafkaHandover(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 1})
	javaDir := handoverJava(t)
	var runs []*handover
	for _, hc := range handoverCases {
		if hc.refused != "" {
			runs = append(runs, &handover{hc: hc, first: "ks"})
			continue
		}
		for _, first := range []string{"ks", "sf"} {
			for _, kill := range []bool{false, true} {
				runs = append(runs, &handover{hc: hc, first: first, kill: kill})
			}
		}
	}
	var ins []Input
	for i, h := range runs {
		h.prefix = kafkatest.Name(t, fmt.Sprintf("h%d", i)) + "."
		h.appID = kafkatest.Name(t, fmt.Sprintf("app%d", i))
		h.in, h.halves = handoverInput(t, h.hc, h.prefix, int64(i+1))
		ins = append(ins, h.in)
	}
	// One JVM runs every uninterrupted run in TopologyTestDriver, while the brokers work.
	wait, err := JVM{JavaDir: javaDir, Threads: 2}.Start(t.TempDir(), ins)
	if err != nil {
		t.Fatal(err)
	}
	want, err := wait()
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range runs {
		t.Run(h.name(), func(t *testing.T) {
			t.Parallel()
			if want[i].Fatal != "" {
				t.Fatalf("TopologyTestDriver: %s", want[i].Fatal)
			}
			runHandover(t, c, javaDir, h, want[i])
		})
	}
}

// handoverInput generates a case's input with its topics under prefix, split in two halves,
// each ordered by the case's groups. A single-topic case is split at a record that is the
// latest so far: Kafka Streams restarts its processors' stream time from the first record
// it sees (a restart alone would otherwise judge a late record differently). Timestamps
// start an hour ago: the broker deletes records older than a topic's retention, and the
// changelogs of window stores have one.
func handoverInput(t *testing.T, hc handoverCase, prefix string, seed int64) (Input, [2][][]Step) {
	var c *Case
	for _, cand := range Cases {
		if cand.Name == hc.name {
			cc := *cand
			c = &cc
		}
	}
	if c == nil {
		t.Fatalf("no conformance case %s", hc.name)
	}
	c.Records = handoverRecords
	in := Generate(c, seed)
	in.TopicPrefix = prefix
	base := time.Now().Add(-time.Hour).UnixMilli() / 1000 * 1000
	for i := range in.Steps {
		in.Steps[i].Topic = prefix + in.Steps[i].Topic
		in.Steps[i].Timestamp += base
	}
	for i := range in.ProbeTimes {
		in.ProbeTimes[i] += base
	}
	split := len(in.Steps) / 2
	if len(hc.groups) == 1 {
		latest := int64(-1)
		for i, s := range in.Steps {
			if i >= split && s.Timestamp > latest {
				split = i
				break
			}
			latest = max(latest, s.Timestamp)
		}
	}
	var halves [2][][]Step
	in.Steps = slices.Concat(groupSteps(in.Steps[:split], hc.groups, prefix, &halves[0]),
		groupSteps(in.Steps[split:], hc.groups, prefix, &halves[1]))
	return in, halves
}

// groupSteps orders steps by the groups of their topics, keeping their order within a
// group, and sets each group's steps in groups.
func groupSteps(steps []Step, order [][]string, prefix string, groups *[][]Step) []Step {
	var out []Step
	for _, g := range order {
		var gs []Step
		for _, s := range steps {
			if slices.Contains(g, strings.TrimPrefix(s.Topic, prefix)) {
				gs = append(gs, s)
			}
		}
		*groups = append(*groups, gs)
		out = append(out, gs...)
	}
	return out
}

func runHandover(t *testing.T, c *kafkatest.Cluster, javaDir string, h *handover, want *Result) {
	start := time.Now()
	cl := c.Client(t)
	var inputs []string
	for _, g := range h.hc.groups {
		for _, topic := range g {
			inputs = append(inputs, h.prefix+topic)
			c.CreateTopic(t, h.prefix+topic, 1, nil)
		}
	}
	for _, topic := range h.hc.outputs {
		c.CreateTopic(t, h.prefix+topic, 1, nil)
	}
	engines := map[string]handoverEngine{
		"ks": &ksApp{javaDir: javaDir, h: h, bootstrap: c.BootstrapServers()},
		"sf": &sfAgent{h: h, bootstrap: c.BootstrapServers()},
	}
	first, second := engines[h.first], engines[map[string]string{"ks": "sf", "sf": "ks"}[h.first]]
	for _, e := range engines {
		defer e.cleanup(t)
	}

	first.start(t)
	for g, steps := range h.halves[0] {
		produceSteps(t, cl, steps)
		topics := groupTopics(h, g)
		if h.kill && g == len(h.halves[0])-1 {
			// Killed half way through its last group: the second side processes the rest
			// from the committed offsets, and nothing of the open transaction may count.
			waitCommitted(t, cl, h, first, topics, int64(len(steps)/2))
			first.kill(t)
			break
		}
		waitCommitted(t, cl, h, first, topics, -1)
	}
	if !h.kill {
		first.stop(t)
	}
	// Kafka Streams' assignor and StoatFlow's are other protocols: the second side can join
	// only an empty group. A killed member leaves it when its session times out.
	waitGroupEmpty(t, cl, h.appID)
	t.Logf("%s went first (%v)", first.name(), time.Since(start).Round(time.Millisecond))
	if h.hc.refused != "" {
		second.start(t)
		waitFor(t, nil, "the agent refusing store "+h.hc.refused, func() (bool, string) {
			err := second.err()
			if err == nil {
				return false, "the agent runs"
			}
			if !strings.Contains(err.Error(), "store "+h.hc.refused+" cannot be taken over from Kafka Streams") {
				t.Fatalf("the agent stopped, but not refusing store %s: %v", h.hc.refused, err)
			}
			return true, ""
		})
		return
	}

	second.start(t)
	waitCommitted(t, cl, h, second, inputs, -1)
	for g, steps := range h.halves[1] {
		produceSteps(t, cl, steps)
		waitCommitted(t, cl, h, second, groupTopics(h, g), -1)
	}
	waitDrained(t, cl, h, second)
	stores := second.finish(t)
	t.Logf("%s went second (%v in all)", second.name(), time.Since(start).Round(time.Millisecond))

	got := readOutputs(t, c.Bootstrap(), h)
	for _, topic := range h.hc.outputs {
		var w []Record
		for i := range h.in.Steps {
			for _, r := range want.Outputs[i] {
				if r.Topic == h.prefix+topic {
					w = append(w, r)
				}
			}
		}
		g := got[h.prefix+topic]
		if h.hc.latest {
			w, g = latestByKey(w), latestByKey(g)
		}
		for k := 0; k < max(len(w), len(g)); k++ {
			if k < len(w) && k < len(g) && sameRecord(w[k], g[k]) {
				continue
			}
			t.Fatalf("output record %d of %s differs (%d records in all, %d expected):\n  one uninterrupted run: %s\n  handed over:           %s",
				k, topic, len(g), len(w), fmtRecordAt(w, k), fmtRecordAt(g, k))
		}
	}
	if err := compareStores(want.Stores, stores); err != nil {
		t.Fatalf("the stores at the end differ from one uninterrupted run's:\n%v", err)
	}
}

// latestByKey is each key's latest record, in key order.
func latestByKey(rs []Record) []Record {
	byKey := map[string]Record{}
	for _, r := range rs {
		byKey[string(r.Key)] = r
	}
	out := make([]Record, 0, len(byKey))
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		r := byKey[k]
		r.Timestamp, r.Headers = 0, nil // those of whichever update came last
		out = append(out, r)
	}
	return out
}

// groupTopics are the topics of the case's group g, under the prefix.
func groupTopics(h *handover, g int) []string {
	var out []string
	for _, topic := range h.hc.groups[g] {
		out = append(out, h.prefix+topic)
	}
	return out
}

func produceSteps(t *testing.T, cl *kgo.Client, steps []Step) {
	t.Helper()
	rs := make([]*kgo.Record, len(steps))
	for i, s := range steps {
		r := &kgo.Record{Topic: s.Topic, Key: s.Key, Value: s.Value, Timestamp: time.UnixMilli(s.Timestamp)}
		for _, hd := range s.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: hd.Key, Value: hd.Value})
		}
		rs[i] = r
	}
	if err := cl.ProduceSync(t.Context(), rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// handoverTimeout bounds each wait of a handover: a start, a restore, processing a group.
const handoverTimeout = 40 * time.Second

// waitFor polls cond until it holds, failing the test when the deadline passes or the
// engine fails first.
func waitFor(t *testing.T, e handoverEngine, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(handoverTimeout)
	last := ""
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		if e != nil {
			if err := e.err(); err != nil {
				t.Fatalf("%s failed while waiting for %s (%s): %v", e.name(), what, last, err)
			}
		}
		if time.Now().After(deadline) {
			name := "the test"
			if e != nil {
				name = e.name()
			}
			t.Fatalf("%s: no %s within %v (%s)", name, what, handoverTimeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitCommitted waits until the application's group has committed, on every topic, the end
// of the topic (n < 0), or at least offset n (a kill in the first half, where each topic of
// the group starts at offset 0).
func waitCommitted(t *testing.T, cl *kgo.Client, h *handover, e handoverEngine, topics []string, n int64) {
	t.Helper()
	waitFor(t, e, fmt.Sprintf("committed offsets on %v", topics), func() (bool, string) {
		committed, err := groupOffsets(t, cl, h.appID, topics)
		if err != nil {
			return false, err.Error()
		}
		ends, err := endOffsets(t, cl, topics)
		if err != nil {
			return false, err.Error()
		}
		for _, topic := range topics {
			want := ends[topic]
			if n >= 0 {
				want = min(want, n)
			}
			if committed[topic] < want {
				return false, fmt.Sprintf("committed %v, ends %v", committed, ends)
			}
		}
		return true, ""
	})
}

// waitDrained waits until the application has committed every record of every topic it
// reads, its internal topics (Kafka Streams' repartition and foreign-key topics) included:
// then every output is written.
func waitDrained(t *testing.T, cl *kgo.Client, h *handover, e handoverEngine) {
	t.Helper()
	waitFor(t, e, "every topic read to its end", func() (bool, string) {
		topics, err := internalTopics(t, cl, h.appID)
		if err != nil {
			return false, err.Error()
		}
		for _, g := range h.hc.groups {
			for _, topic := range g {
				topics = append(topics, h.prefix+topic)
			}
		}
		// Committed offsets first: a transaction committing in between moves an end past
		// them, never the other way round.
		committed, err := groupOffsets(t, cl, h.appID, topics)
		if err != nil {
			return false, err.Error()
		}
		ends, err := endOffsets(t, cl, topics)
		if err != nil {
			return false, err.Error()
		}
		for _, topic := range topics {
			if max(committed[topic], 0) < ends[topic] {
				return false, fmt.Sprintf("committed %v, ends %v", committed, ends)
			}
		}
		return true, ""
	})
}

// internalTopics are the repartition and foreign-key join topics of the application that
// Kafka Streams made (StoatFlow keeps them in memory and makes none).
func internalTopics(t *testing.T, cl *kgo.Client, appID string) ([]string, error) {
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(t.Context(), cl)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, mt := range resp.Topics {
		name := *mt.Topic
		if strings.HasPrefix(name, appID+"-") && !strings.HasSuffix(name, "-changelog") {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// groupOffsets are the group's committed offsets of partition 0 of each topic (-1: none).
func groupOffsets(t *testing.T, cl *kgo.Client, group string, topics []string) (map[string]int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	for _, topic := range topics {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic = topic
		rt.Partitions = []int32{0}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(t.Context(), cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, fmt.Errorf("%s: %w", rt.Topic, err)
			}
			out[rt.Topic] = rp.Offset
		}
	}
	return out, nil
}

// endOffsets are the last stable offsets of partition 0 of each topic.
func endOffsets(t *testing.T, cl *kgo.Client, topics []string) (map[string]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = 1
	for _, topic := range topics {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		rt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(t.Context(), cl)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, fmt.Errorf("%s: %w", rt.Topic, err)
			}
			out[rt.Topic] = rp.Offset
		}
	}
	return out, nil
}

// waitGroupEmpty waits until the group has no member.
func waitGroupEmpty(t *testing.T, cl *kgo.Client, group string) {
	t.Helper()
	waitFor(t, nil, "empty group "+group, func() (bool, string) {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(t.Context(), cl)
		if err != nil {
			return false, err.Error()
		}
		for _, g := range resp.Groups {
			if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
				return false, err.Error()
			}
			if len(g.Members) > 0 {
				return false, fmt.Sprintf("state %s, %d members (protocol %s)", g.State, len(g.Members), g.Protocol)
			}
		}
		return true, ""
	})
}

// readOutputs reads the output topics to their last stable offsets, read_committed.
func readOutputs(t *testing.T, bootstrap []string, h *handover) map[string][]Record {
	t.Helper()
	var topics []string
	for _, topic := range h.hc.outputs {
		topics = append(topics, h.prefix+topic)
	}
	// Control records (transaction markers) take offsets too, the last one often: they
	// are kept to see the end reached, and left out of what is returned.
	rd, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	ends, err := endOffsets(t, rd, topics)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]Record{}
	var todo []string
	for _, topic := range topics {
		if ends[topic] > 0 {
			todo = append(todo, topic)
		}
	}
	if len(todo) == 0 {
		return out
	}
	rd.AddConsumeTopics(todo...)
	ctx, cancel := context.WithTimeout(t.Context(), handoverTimeout)
	defer cancel()
	done := map[string]bool{}
	for len(done) < len(todo) {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %v: %v", todo, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("reading %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= ends[r.Topic] {
				done[r.Topic] = true
			}
			if r.Attrs.IsControl() {
				return
			}
			rec := Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp.UnixMilli()}
			for _, hd := range r.Headers {
				rec.Headers = append(rec.Headers, pipeline.Header{Key: hd.Key, Value: hd.Value})
			}
			out[r.Topic] = append(out[r.Topic], rec)
		})
	}
	return out
}

// handoverJava is the conformance/java directory, built (make test-kafka builds it).
func handoverJava(t *testing.T) string {
	const dir = "java"
	if _, err := os.Stat(dir + "/target/classpath.txt"); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the Java side is not built: make test-kafka builds it (cd conformance/java && mvn -q -B package)")
		}
		t.Fatal(err)
	}
	return dir
}
