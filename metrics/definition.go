package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Definition describes one exported metric, for docs/metrics.md.
type Definition struct {
	Name   string // full Prometheus name
	Type   string // counter, gauge or histogram
	Labels []string
	Help   string
}

// Definitions lists every StoatFlow metric in the order New defines them.
func (m *Metrics) Definitions() []Definition { return slices.Clone(m.defs) }

// define registers c and records its definition; the helpers below build c from the same
// name, help and labels, so the docs cannot drift from what is served.
func (m *Metrics) define(c prometheus.Collector, typ, subsystem, name, help string, labels []string) {
	m.registry.MustRegister(c)
	m.defs = append(m.defs, Definition{
		Name:   prometheus.BuildFQName(namespace, subsystem, name),
		Type:   typ,
		Labels: labels,
		Help:   help,
	})
}

func (m *Metrics) counter(subsystem, name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help})
	m.define(c, "counter", subsystem, name, help, nil)
	return c
}

func (m *Metrics) counterVec(subsystem, name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}, labels)
	m.define(c, "counter", subsystem, name, help, labels)
	return c
}

func (m *Metrics) gauge(subsystem, name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help})
	m.define(g, "gauge", subsystem, name, help, nil)
	return g
}

func (m *Metrics) gaugeVec(subsystem, name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}, labels)
	m.define(g, "gauge", subsystem, name, help, labels)
	return g
}

func (m *Metrics) histogram(subsystem, name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help, Buckets: buckets})
	m.define(h, "histogram", subsystem, name, help, nil)
	return h
}

func (m *Metrics) histogramVec(subsystem, name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help, Buckets: buckets}, labels)
	m.define(h, "histogram", subsystem, name, help, labels)
	return h
}
