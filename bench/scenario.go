package main

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed scripts/*.lua scripts/*.avsc
var scripts embed.FS

// The windowed scenario's hopping windows (bench/scripts/windowed.lua).
const (
	windowSize    = 10_000
	windowAdvance = 5_000
	windowGrace   = 1_000
)

// commitIntervalMs is the exactly-once scenarios' commit.interval.ms; the word count's p99
// latency target is this plus 50 ms.
const commitIntervalMs = 100

// scenario is one row of the results table.
type scenario struct {
	name string
	// script is the file under bench/scripts the agent runs.
	script string
	// pipe runs the raw sarama pipe instead of an agent, with the script's agent config for
	// its client settings, so that both batch and acknowledge alike.
	pipe bool
	// txnPipe runs the exactly-once pipe (txnpipe.go) on that transactional producer,
	// txnProducerSarama or txnProducerKafkaio, instead of an agent, with the script's
	// agent config for its client settings and commit.interval.ms.
	txnPipe string
	// streams is the [streams] part of the agent config beyond the brokers and state dir.
	streams string
	// expect counts the output records the input yields.
	expect func() outputCounter
	// latency says whether a paced phase measures end-to-end latency after the backlog:
	// suppressed windows emit only when they close, so latency means something else there,
	// and the 1 M keys word counts measure throughput only.
	latency bool
	// closeWindows ends the input with records past every window's end and grace.
	closeWindows bool
	// avro makes the input values Avro records (bench/scripts/line.avsc) on a schema
	// registry the harness runs; json makes them JSON objects of the same fields.
	avro bool
	json bool
	// goka runs goka's processor of that name (bench/goka) instead of an agent, with the
	// Kafka client settings of the agent config the scenario's script and streams make.
	goka string
	// kstreams runs Kafka Streams 4.4's word count (bench/kstreams) instead of an agent, on
	// Apache Kafka only, with the Kafka Streams properties the scenario's streams make.
	kstreams bool
	// vocabulary is the number of distinct words the keys are drawn from; 0 is vocabSize.
	vocabulary int
}

// millionKeys is the vocabulary of the 1 M keys word counts: 1 M input records draw about
// 632 k distinct keys from it, most of them absent from the store when they first come.
const millionKeys = 1_000_000

// atLeastOnce is the [streams] config of the at-least-once scenarios.
const atLeastOnce = `processing.guarantee = "at_least_once"`

// twoThreads runs a scenario's agent with two workers (issue 30).
const twoThreads = "\nnum.stream.threads = 2"

// eosPipeStreams is the exactly-once pipes' [streams] config: the agent's exactly-once
// clients (read_committed, an idempotent transactional producer) committing as often as the
// exactly-once word count.
var eosPipeStreams = fmt.Sprintf(`processing.guarantee = "exactly_once_v2"
commit.interval.ms = %d`, commitIntervalMs)

// wordcountStreams is the word counts' [streams] config under a guarantee: every count
// update is emitted downstream (statestore.cache.max.bytes = 0, as issue 8 measures), and
// at-least-once commits as often as exactly-once, so the two differ in the guarantee only.
func wordcountStreams(guarantee string) string {
	return fmt.Sprintf(`processing.guarantee = %q
commit.interval.ms = %d
enable.transactional.statestores = true
statestore.cache.max.bytes = 0`, guarantee, commitIntervalMs)
}

var scenarios = []scenario{
	{
		name:    "ceiling",
		script:  "stateless.lua",
		pipe:    true,
		streams: atLeastOnce,
		expect:  everyRecord,
		latency: true,
	},
	{
		name:    "eos-pipe-sarama",
		script:  "stateless.lua",
		txnPipe: txnProducerSarama,
		streams: eosPipeStreams,
		expect:  everyRecord,
		latency: true,
	},
	{
		name:    "eos-pipe-kafkaio",
		script:  "stateless.lua",
		txnPipe: txnProducerKafkaio,
		streams: eosPipeStreams,
		expect:  everyRecord,
		latency: true,
	},
	{
		name:    "stateless",
		script:  "stateless.lua",
		streams: atLeastOnce,
		expect:  longWords,
		latency: true,
	},
	{
		name:    "goka-stateless",
		script:  "stateless.lua",
		streams: atLeastOnce,
		expect:  longWords,
		latency: true,
		goka:    "stateless",
	},
	{
		name:    "lua-heavy",
		script:  "lua_heavy.lua",
		streams: atLeastOnce,
		expect:  everyRecord,
		latency: true,
		json:    true,
	},
	{
		name:    "lua-heavy-2t",
		script:  "lua_heavy.lua",
		streams: atLeastOnce + twoThreads,
		expect:  everyRecord,
		latency: true,
		json:    true,
	},
	{
		name:    "stateless-avro",
		script:  "stateless_avro.lua",
		streams: atLeastOnce,
		expect:  longWords,
		latency: true,
		avro:    true,
	},
	{
		name:    "wordcount",
		script:  "wordcount.lua",
		streams: wordcountStreams("exactly_once_v2"),
		// Every line holds one word, and every count update is emitted.
		expect:  everyRecord,
		latency: true,
	},
	{
		name:    "wordcount-2t",
		script:  "wordcount.lua",
		streams: wordcountStreams("exactly_once_v2") + twoThreads,
		expect:  everyRecord,
		latency: true,
	},
	{
		name:    "wordcount-alos",
		script:  "wordcount.lua",
		streams: wordcountStreams("at_least_once"),
		expect:  everyRecord,
		latency: true,
	},
	{
		name:    "goka-wordcount",
		script:  "wordcount.lua",
		streams: wordcountStreams("at_least_once"),
		expect:  everyRecord,
		latency: true,
		goka:    "wordcount",
	},
	{
		name:     "ks-wordcount",
		script:   "wordcount.lua",
		streams:  wordcountStreams("exactly_once_v2"),
		expect:   everyRecord,
		latency:  true,
		kstreams: true,
	},
	{
		name:     "ks-wordcount-alos",
		script:   "wordcount.lua",
		streams:  wordcountStreams("at_least_once"),
		expect:   everyRecord,
		latency:  true,
		kstreams: true,
	},
	{
		name:       "wordcount-1m-keys",
		script:     "wordcount.lua",
		streams:    wordcountStreams("exactly_once_v2"),
		expect:     everyRecord,
		vocabulary: millionKeys,
	},
	{
		name:       "goka-wordcount-1m-keys",
		script:     "wordcount.lua",
		streams:    wordcountStreams("at_least_once"),
		expect:     everyRecord,
		goka:       "wordcount",
		vocabulary: millionKeys,
	},
	{
		name:   "windowed",
		script: "windowed.lua",
		streams: fmt.Sprintf(`processing.guarantee = "exactly_once_v2"
commit.interval.ms = %d
enable.transactional.statestores = true`, commitIntervalMs),
		expect:       func() outputCounter { return newWindowPairs(windowSize, windowAdvance) },
		closeWindows: true,
	},
}

// everyRecord expects one output per input: every word count update is emitted.
func everyRecord() outputCounter { return &perRecord{keep: func(string) bool { return true }} }

// longWords expects what the stateless pipelines keep: the words longer than four letters.
func longWords() outputCounter { return &perRecord{keep: func(k string) bool { return len(k) > 4 }} }

func scenarioNames() []string {
	var names []string
	for _, s := range scenarios {
		names = append(names, s.name)
	}
	return names
}

func scenarioNamed(name string) (scenario, error) {
	for _, s := range scenarios {
		if s.name == name {
			return s, nil
		}
	}
	return scenario{}, fmt.Errorf("unknown scenario %q (have: %s)", name, strings.Join(scenarioNames(), ", "))
}

// parseScenarios reads the -scenarios list, keeping the table's order.
func parseScenarios(list string) ([]scenario, error) {
	want := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if _, err := scenarioNamed(n); err != nil {
			return nil, fmt.Errorf("-scenarios: %w", err)
		}
		want[n] = true
	}
	if len(want) == 0 {
		return nil, fmt.Errorf("-scenarios: no scenario in %q", list)
	}
	var out []scenario
	for _, s := range scenarios {
		if want[s.name] {
			out = append(out, s)
		}
	}
	return out, nil
}

// agentConfig is the TOML config of a scenario's agent; registry is the schema registry's
// URL of an Avro scenario. The agent leaves its group when it stops: Apache Kafka outlives
// a run, and a member left in the group would hold the next run's first rebalance until its
// session timed out.
func (s scenario) agentConfig(brokers []string, stateDir, script, registry string) string {
	streams := s.streams
	if registry != "" {
		streams += fmt.Sprintf("\nschema.registry.url = %q", registry)
	}
	return fmt.Sprintf(`[agent]
scripts = [%q]
http.listen = "127.0.0.1:0"
log.level = "warn"
leave.group.on.close = true

[streams]
application.id = "bench-%s"
bootstrap.servers = %q
state.dir = %q
%s
`, script, s.name, strings.Join(brokers, ","), stateDir, streams)
}

// outputCounter counts the output records a scenario must produce for its input.
type outputCounter interface {
	add(key string, ts int64)
	total() int64
}

// perRecord expects one output per input record that keep accepts.
type perRecord struct {
	keep func(key string) bool
	n    int64
}

func (p *perRecord) add(key string, _ int64) {
	if p.keep(key) {
		p.n++
	}
}

func (p *perRecord) total() int64 { return p.n }

// windowPairs expects one final result per (key, hopping window) that holds a record, as
// suppress(untilWindowCloses) emits once the harness's trailing records close every window.
type windowPairs struct {
	size, advance int64
	open          map[int64]map[string]struct{} // window start → keys seen
	closed        int64
}

func newWindowPairs(size, advance int64) *windowPairs {
	return &windowPairs{size: size, advance: advance, open: map[int64]map[string]struct{}{}}
}

// add takes records in timestamp order, so a window is complete once a record is past its end.
func (w *windowPairs) add(key string, ts int64) {
	for start, keys := range w.open {
		if start+w.size <= ts {
			w.closed += int64(len(keys))
			delete(w.open, start)
		}
	}
	// Kafka Streams' TimeWindows.windowsFor: every start that is a multiple of advance with
	// start <= ts < start + size.
	first := max(0, ts-w.size+w.advance) / w.advance * w.advance
	for start := first; start <= ts; start += w.advance {
		keys := w.open[start]
		if keys == nil {
			keys = map[string]struct{}{}
			w.open[start] = keys
		}
		keys[key] = struct{}{}
	}
}

func (w *windowPairs) total() int64 {
	n := w.closed
	for _, keys := range w.open {
		n += int64(len(keys))
	}
	return n
}
