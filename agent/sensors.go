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

func (s metricSensors) Dropped(node string, reason pipeline.DropReason) pipeline.Counter {
	return s.m.RecordsDropped.WithLabelValues(node, reason.String())
}

// zeroDropReasons creates the engine's drop reasons at zero, under node "", as metrics.New
// does for the exception handlers' ones, so that every reason's series exists before the
// first record and an alert on its rate (summed by reason) works from the start.
func zeroDropReasons(m *metrics.Metrics) {
	for _, r := range pipeline.DropReasons() {
		m.RecordsDropped.WithLabelValues("", r.String())
	}
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

func (s metricSensors) TaskProcessed(task string) pipeline.Counter {
	return s.m.TaskProcessed.WithLabelValues(task)
}
