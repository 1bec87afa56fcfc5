package agent

import (
	"github.com/stoatflow/stoatflow/metrics"
	"github.com/stoatflow/stoatflow/pipeline"
)

// metricSensors hands the engine its Prometheus counters and histograms.
type metricSensors struct{ m *metrics.Metrics }

func (s metricSensors) Processed(node string) pipeline.Counter {
	return s.m.RecordsProcessed.WithLabelValues(node)
}

func (s metricSensors) Dropped(reason string) pipeline.Counter {
	return s.m.RecordsDropped.WithLabelValues(reason)
}

func (s metricSensors) EndToEnd(node string) pipeline.Observer {
	return s.m.RecordE2ELatency.WithLabelValues(node)
}

func (s metricSensors) Punctuation(node string) pipeline.Observer {
	return s.m.PunctuationLatency.WithLabelValues(node)
}

func (s metricSensors) StoreLatency(store, op string) pipeline.Observer {
	return s.m.StoreLatency.WithLabelValues(store, op)
}
