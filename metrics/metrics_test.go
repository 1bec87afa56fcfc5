package metrics

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// touch gives every metric one series, so that labelled vectors show up in a scrape.
// It is keyed by field name so the test notices a field added without an entry here.
var touch = map[string]func(m *Metrics){
	"RecordsConsumed":  func(m *Metrics) { m.RecordsConsumed.WithLabelValues("in").Inc() },
	"RecordsProduced":  func(m *Metrics) { m.RecordsProduced.WithLabelValues("out").Inc() },
	"RecordsProcessed": func(m *Metrics) { m.RecordsProcessed.WithLabelValues("KSTREAM-SOURCE-0000000000").Inc() },
	"RecordsDropped": func(m *Metrics) {
		m.RecordsDropped.WithLabelValues("KSTREAM-MAPVALUES-0000000001", DropProcessing).Inc()
	},
	"TaskProcessed":      func(m *Metrics) { m.TaskProcessed.WithLabelValues("1_0").Inc() },
	"TaskStreamTime":     func(m *Metrics) { m.TaskStreamTime.WithLabelValues("1_0").Set(1_700_000_000_000) },
	"TaskLag":            func(m *Metrics) { m.TaskLag.WithLabelValues("1_0").Set(7) },
	"ThreadTasks":        func(m *Metrics) { m.ThreadTasks.WithLabelValues("0").Set(4) },
	"ThreadTasksCreated": func(m *Metrics) { m.ThreadTasksCreated.WithLabelValues("1").Inc() },
	"ThreadTasksClosed":  func(m *Metrics) { m.ThreadTasksClosed.WithLabelValues("0").Inc() },
	"ThreadBlocked":      func(m *Metrics) { m.ThreadBlocked.WithLabelValues("0").Add(0.5) },
	"ProcessLatency":     func(m *Metrics) { m.ProcessLatency.Observe(0.0001) },
	"RecordE2ELatency":   func(m *Metrics) { m.RecordE2ELatency.WithLabelValues("KSTREAM-SINK-0000000001").Observe(0.5) },
	"PunctuationLatency": func(m *Metrics) {
		m.PunctuationLatency.WithLabelValues("KSTREAM-PROCESSOR-0000000001").Observe(0.001)
	},
	"LuaErrors":         func(m *Metrics) { m.LuaErrors.WithLabelValues("wordcount.lua").Inc() },
	"LuaTime":           func(m *Metrics) { m.LuaTime.WithLabelValues("KSTREAM-MAPVALUES-0000000001").Add(0.25) },
	"CommitLatency":     func(m *Metrics) { m.CommitLatency.Observe(0.002) },
	"Commits":           func(m *Metrics) { m.Commits.WithLabelValues(ResultSuccess).Inc() },
	"EarlyCommits":      func(m *Metrics) { m.EarlyCommits.Inc() },
	"EpochSize":         func(m *Metrics) { m.EpochSize.Observe(1000) },
	"UncommittedSize":   func(m *Metrics) { m.UncommittedSize.WithLabelValues("counts").Set(42) },
	"RecordsRestored":   func(m *Metrics) { m.RecordsRestored.WithLabelValues("counts").Add(10) },
	"StateRebuilds":     func(m *Metrics) { m.StateRebuilds.WithLabelValues("running").Inc() },
	"StoreLatency":      func(m *Metrics) { m.StoreLatency.WithLabelValues("counts", "put").Observe(0.00001) },
	"ConsumerLag":       func(m *Metrics) { m.ConsumerLag.WithLabelValues("in", "0").Set(3) },
	"StreamTime":        func(m *Metrics) { m.StreamTime.WithLabelValues("in", "0").Set(1_700_000_000_000) },
	"Watermark":         func(m *Metrics) { m.Watermark.Set(1_700_000_000_000) },
	"WatermarkLag":      func(m *Metrics) { m.WatermarkLag.Set(2.5) },
	"BrokerReachable":   func(m *Metrics) { m.BrokerReachable.WithLabelValues("kafka-1:9092").Set(1) },
	"RegistryCallStart": func(m *Metrics) { m.RegistryCallStart.Set(1.7e9) },
	"AppState":          func(m *Metrics) { m.AppState.WithLabelValues("RUNNING").Set(1) },
	"Reloads":           func(m *Metrics) { m.Reloads.WithLabelValues(ResultFailure).Inc() },
	"ReloadRollbacks":   func(m *Metrics) { m.ReloadRollbacks.Inc() },
	"GroupRole":         func(m *Metrics) { m.GroupRole.WithLabelValues(RoleActive).Set(1) },
	"Takeovers":         func(m *Metrics) { m.Takeovers.Inc() },
	"StandbyLag":        func(m *Metrics) { m.StandbyLag.WithLabelValues("counts", "0").Set(3) },
}

// allowedLabels is the closed set of label names: each has a bounded number of values
// chosen by the operator's topology, never by the data (no record keys).
var allowedLabels = map[string]bool{
	"topic": true, "partition": true, "node": true, "reason": true,
	"result": true, "state": true, "store": true, "script": true, "operation": true, "when": true,
	"broker": true, // the bootstrap servers of the config
	"role":   true, // active or standby
	"task":   true, // <sub-topology>_<partition>: the topology's sub-topologies times their partitions
	"thread": true, // 0 .. num.stream.threads-1
}

var (
	nameRule      = regexp.MustCompile(`^stoatflow_[a-z]+_[a-z0-9_]+$`)
	histogramUnit = regexp.MustCompile(`_(seconds|bytes|records)$`)
)

func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape status = %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("scrape content type = %q, want the text exposition format", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	return families
}

func TestEveryMetricFollowsNamingRules(t *testing.T) {
	m := New()
	fields := reflect.TypeOf(*m)
	collectors := 0
	for i := range fields.NumField() {
		f := fields.Field(i)
		if !f.IsExported() {
			continue
		}
		collectors++
		fn, ok := touch[f.Name]
		if !ok {
			t.Fatalf("field %s has no entry in touch: add one so the naming test covers it", f.Name)
		}
		fn(m)
	}

	stoat := 0
	for name, fam := range scrape(t, m) {
		if !strings.HasPrefix(name, "stoatflow_") {
			if !strings.HasPrefix(name, "go_") && !strings.HasPrefix(name, "process_") {
				t.Errorf("%s: only stoatflow_, go_ and process_ families belong in the registry", name)
			}
			continue
		}
		stoat++
		if !nameRule.MatchString(name) {
			t.Errorf("%s: want stoatflow_<subsystem>_<name>[_<unit>] in lower snake case", name)
		}
		if fam.GetHelp() == "" {
			t.Errorf("%s: no help text", name)
		}
		isTotal := strings.HasSuffix(name, "_total")
		switch fam.GetType() {
		case dto.MetricType_COUNTER:
			if !isTotal {
				t.Errorf("%s: counter without _total suffix", name)
			}
		case dto.MetricType_HISTOGRAM:
			if !histogramUnit.MatchString(name) {
				t.Errorf("%s: histogram without a unit suffix (_seconds, _bytes, _records)", name)
			}
		case dto.MetricType_GAUGE:
			if isTotal {
				t.Errorf("%s: _total is reserved for counters", name)
			}
		default:
			t.Errorf("%s: unexpected type %v", name, fam.GetType())
		}
		for _, metric := range fam.GetMetric() {
			for _, label := range metric.GetLabel() {
				if !allowedLabels[label.GetName()] {
					t.Errorf("%s: label %q is not in the bounded label set", name, label.GetName())
				}
			}
		}
	}
	if stoat != collectors {
		t.Errorf("scrape has %d stoatflow families, Metrics has %d fields", stoat, collectors)
	}
}

func TestClosedLabelSetsExistAtZero(t *testing.T) {
	families := scrape(t, New())
	want := map[string][]string{
		"stoatflow_processor_records_dropped_total": {DropDeserialization, DropProcessing, DropProduction, DropDeadLetter},
		"stoatflow_commit_commits_total":            {ResultSuccess, ResultFailure},
		"stoatflow_app_reloads_total":               {ResultSuccess, ResultFailure},
	}
	for name, values := range want {
		fam, ok := families[name]
		if !ok {
			t.Errorf("%s missing from a fresh scrape", name)
			continue
		}
		got := map[string]float64{}
		for _, metric := range fam.GetMetric() {
			l := metric.GetLabel()
			got[l[len(l)-1].GetValue()] = metric.GetCounter().GetValue()
		}
		for _, v := range values {
			if val, ok := got[v]; !ok || val != 0 {
				t.Errorf("%s{%q}: present=%v value=%v, want a zero series", name, v, ok, val)
			}
		}
		if len(got) != len(values) {
			t.Errorf("%s: series %v, want exactly %v", name, got, values)
		}
	}
}

func TestRegistriesAreIndependent(t *testing.T) {
	a, b := New(), New()
	a.LuaTime.WithLabelValues("KSTREAM-MAPVALUES-0000000001").Add(1.5)
	b.LuaTime.WithLabelValues("KSTREAM-MAPVALUES-0000000001")
	fam := scrape(t, b)["stoatflow_lua_execution_seconds_total"]
	if v := fam.GetMetric()[0].GetCounter().GetValue(); v != 0 {
		t.Fatalf("second registry sees %v seconds from the first", v)
	}
	if a.Registry() == b.Registry() {
		t.Fatal("two Metrics share one registry")
	}
}

// TestDefinitionsDescribeTheRegistry checks each definition against what a scrape serves,
// so docs/metrics.md, generated from the definitions, tells the truth.
func TestDefinitionsDescribeTheRegistry(t *testing.T) {
	m := New()
	for _, fn := range touch {
		fn(m)
	}
	families := scrape(t, m)
	defs := m.Definitions()
	stoat := 0
	for name := range families {
		if strings.HasPrefix(name, "stoatflow_") {
			stoat++
		}
	}
	if len(defs) != stoat {
		t.Errorf("%d definitions for %d stoatflow families", len(defs), stoat)
	}
	for _, d := range defs {
		fam, ok := families[d.Name]
		if !ok {
			t.Errorf("%s is defined but not served", d.Name)
			continue
		}
		if got := strings.ToLower(fam.GetType().String()); got != d.Type {
			t.Errorf("%s: defined as %s, served as %s", d.Name, d.Type, got)
		}
		if fam.GetHelp() != d.Help {
			t.Errorf("%s: defined help %q, served %q", d.Name, d.Help, fam.GetHelp())
		}
		var served []string
		for _, l := range fam.GetMetric()[0].GetLabel() {
			served = append(served, l.GetName())
		}
		// The exposition format sorts labels by name.
		if !slices.Equal(served, slices.Sorted(slices.Values(d.Labels))) {
			t.Errorf("%s: defined labels %v, served %v", d.Name, d.Labels, served)
		}
	}
}

func TestMarkdownListsEveryMetric(t *testing.T) {
	md, err := Markdown()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range New().Definitions() {
		if !strings.Contains(md, "| `"+d.Name+"` | "+d.Type+" |") {
			t.Errorf("docs miss a row for %s", d.Name)
		}
	}
	for _, want := range []string{
		"| `stoatflow_state_operation_latency_seconds` | histogram | `store`, `operation` |",
		"one operation in 64 of each kind",
		"window-closed (window already closed by the watermark)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("docs miss %q", want)
		}
	}
}

var update = flag.Bool("update", false, "rewrite docs/metrics.md from the metric definitions")

func TestDocsUpToDate(t *testing.T) {
	path := filepath.Join("..", "docs", "metrics.md")
	want, err := Markdown()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf("docs/metrics.md is out of date with metrics/metrics.go; regenerate it with: go test ./metrics -update")
	}
}
