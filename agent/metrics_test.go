package agent

import (
	"context"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
)

// punctuatedCountScript counts per key in a store and schedules a stream-time punctuator,
// so one topology touches every per-record metric family.
const punctuatedCountScript = `
local s = require("stoat")
local b = s.builder()
b:addStateStore{name = "counts", type = "timestampedKeyValue", valueSerde = "long"}
b:stream("in"):process(function()
  local store
  return {
    init = function(ctx)
      store = ctx:getStateStore("counts")
      ctx:schedule(1, "stream-time", function(ts) end)
    end,
    process = function(ctx, k, v, r)
      local n = (store:get(k) or 0) + 1
      store:put(k, n)
      ctx:forward(k, n)
    end,
  }
end, {stores = {"counts"}}):to("out", {valueSerde = "long"})
return b
`

const (
	srcNode  = "KSTREAM-SOURCE-0000000000"
	procNode = "KSTREAM-PROCESSOR-0000000001"
	sinkNode = "KSTREAM-SINK-0000000002"
)

type scrapeResult map[string]*dto.MetricFamily

func scrapeMetrics(t *testing.T, base string) scrapeResult {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: status %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value is the series of family name with exactly labels: a counter's or gauge's value, a
// histogram's sample count.
func (s scrapeResult) value(name string, labels ...string) (float64, bool) {
	fam, ok := s[name]
	if !ok {
		return 0, false
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, m := range fam.GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			if want[l.GetName()] != l.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		switch fam.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), true
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

type series struct {
	name   string
	labels []string
}

// scrapeWhen scrapes until ok holds for the scrape or the deadline passes.
func scrapeWhen(t *testing.T, base, what string, ok func(scrapeResult) bool) scrapeResult {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := scrapeMetrics(t, base)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMetricsScrapedTwiceArePresentAndMoving(t *testing.T) {
	brokers := testBroker(t, 2, "in", "out")
	ra := startAgentWith(t, testConfig(t, brokers, punctuatedCountScript, ""), metrics.New())
	t.Cleanup(func() { _ = ra.stop(t) })
	addr, err := ra.a.HTTPAddr(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + addr

	// Each round writes to both partitions; the second writes more than a store sample
	// (64 operations per partition), so the sampled store latencies move too.
	round := func(from, perPartition int) scrapeResult {
		produce(t, brokers, "in", 0, perPartition, nil, from)
		produce(t, brokers, "in", 1, perPartition, nil, from+perPartition)
		// produce stamps record i at producedAt + i; the rounds number their records
		// on, so from + 2*perPartition records are in once the round's epochs committed.
		last0 := float64(producedAt + int64(from+perPartition-1))
		last1 := last0 + float64(perPartition)
		return scrapeWhen(t, base, "a commit of the round's records", func(s scrapeResult) bool {
			st0, _ := s.value("stoatflow_time_stream_time_milliseconds", "topic", "in", "partition", "0")
			st1, _ := s.value("stoatflow_time_stream_time_milliseconds", "topic", "in", "partition", "1")
			committed := 0.0
			if fam, ok := s["stoatflow_commit_epoch_size_records"]; ok && len(fam.GetMetric()) == 1 {
				committed = fam.GetMetric()[0].GetHistogram().GetSampleSum()
			}
			return st0 >= last0 && st1 >= last1 && committed >= float64(from+2*perPartition)
		})
	}
	first := round(0, 10)
	second := round(20, 2*pipeline.StoreLatencySampleEvery)

	moving := []series{
		{"stoatflow_consumer_records_consumed_total", []string{"topic", "in"}},
		{"stoatflow_producer_records_produced_total", []string{"topic", "out"}},
		{"stoatflow_processor_records_processed_total", []string{"node", srcNode}},
		{"stoatflow_processor_records_processed_total", []string{"node", procNode}},
		{"stoatflow_processor_records_processed_total", []string{"node", sinkNode}},
		{"stoatflow_processor_process_latency_seconds", nil},
		{"stoatflow_processor_record_e2e_latency_seconds", []string{"node", srcNode}},
		{"stoatflow_processor_record_e2e_latency_seconds", []string{"node", sinkNode}},
		{"stoatflow_processor_punctuation_latency_seconds", []string{"node", procNode}},
		{"stoatflow_state_operation_latency_seconds", []string{"store", "counts", "operation", pipeline.StoreOpPut}},
		{"stoatflow_state_operation_latency_seconds", []string{"store", "counts", "operation", pipeline.StoreOpGet}},
		{"stoatflow_commit_commits_total", []string{"result", metrics.ResultSuccess}},
		{"stoatflow_commit_latency_seconds", nil},
		{"stoatflow_commit_epoch_size_records", nil},
		{"stoatflow_lua_execution_seconds_total", []string{"node", procNode}},
		{"stoatflow_time_watermark_milliseconds", nil},
		{"stoatflow_time_stream_time_milliseconds", []string{"topic", "in", "partition", "0"}},
		{"stoatflow_time_stream_time_milliseconds", []string{"topic", "in", "partition", "1"}},
	}
	for _, s := range moving {
		a, okA := first.value(s.name, s.labels...)
		b, okB := second.value(s.name, s.labels...)
		switch {
		case !okA || !okB:
			t.Errorf("%s%v: in first scrape %v, in second %v", s.name, s.labels, okA, okB)
		case a <= 0 || b <= a:
			t.Errorf("%s%v: %v then %v, want a positive value that grows as records flow", s.name, s.labels, a, b)
		}
	}

	present := []series{
		{"stoatflow_state_uncommitted_bytes", []string{"store", "counts"}},
		{"stoatflow_state_operation_latency_seconds", []string{"store", "counts", "operation", pipeline.StoreOpRange}},
		{"stoatflow_consumer_lag_records", []string{"topic", "in", "partition", "0"}},
		{"stoatflow_processor_records_dropped_total", []string{"node", "", "reason", pipeline.DropLate.String()}},
		{"stoatflow_commit_commits_total", []string{"result", metrics.ResultFailure}},
		{"stoatflow_app_state", []string{"state", StateRunning.String()}},
		// No error and no restore yet: both exist at zero, so the first one is an increase.
		{"stoatflow_lua_errors_total", []string{"script", ra.a.cfg.Scripts[0]}},
		{"stoatflow_state_records_restored_total", []string{"store", "counts"}},
	}
	for _, s := range present {
		if _, ok := second.value(s.name, s.labels...); !ok {
			t.Errorf("%s%v missing", s.name, s.labels)
		}
	}
	// The count store's changelog is written too, but the metric counts sink topics only.
	changelog := pipeline.ChangelogTopic(ra.a.cfg.ApplicationID, "counts")
	if v, ok := second.value("stoatflow_producer_records_produced_total", "topic", changelog); ok {
		t.Errorf("records produced counts the changelog %s: %v", changelog, v)
	}
	if v, _ := second.value("stoatflow_app_state", "state", StateRunning.String()); v != 1 {
		t.Errorf("app state RUNNING = %v, want 1", v)
	}
	// The records carry timestamps from an hour ago (producedAt): the watermark trails the
	// wall clock by more than that.
	if v, ok := second.value("stoatflow_time_watermark_lag_seconds"); !ok || v < (time.Hour-time.Minute).Seconds() {
		t.Errorf("watermark lag = %v (present %v), want nearly an hour or more", v, ok)
	}
	wm, _ := second.value("stoatflow_time_watermark_milliseconds")
	lag, _ := second.value("stoatflow_time_watermark_lag_seconds")
	if now := float64(time.Now().UnixMilli()); lag*1000 > now-wm || lag*1000 < now-wm-60_000 {
		t.Errorf("watermark lag %v s does not match now - watermark %v ms", lag, now-wm)
	}
}

// The docs of the store latency metric quote the engine's sampling rate.
func TestStoreLatencySampleRateMatchesTheEngine(t *testing.T) {
	if metrics.StoreLatencySampleEvery != pipeline.StoreLatencySampleEvery {
		t.Fatalf("metrics documents one store operation in %d, the engine samples one in %d",
			metrics.StoreLatencySampleEvery, pipeline.StoreLatencySampleEvery)
	}
}
