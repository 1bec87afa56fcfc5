package agent

import (
	"io"
	"net/http"

	"github.com/stoatflow/stoatflow/agent/config"
	"github.com/stoatflow/stoatflow/pipeline"
)

// topologyView is the running topology's description, as JSON and as text.
type topologyView struct {
	desc *pipeline.TopologyDescription
	text string
}

// serveTopology adds GET /topology/ks (the TopologyDescription text, as
// KafkaStreams#describe().toString() prints it) and GET /topology (the same as JSON). The
// handlers read a.topology, so a reload only has to call setTopology.
func (a *Agent) serveTopology(b *pipeline.StreamsBuilder) {
	a.setTopology(b)
	a.http.Handle("GET /topology/ks", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(a.topology.Load().text))
	}))
	a.http.Handle("GET /topology", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, a.topology.Load().desc)
	}))
}

func (a *Agent) setTopology(b *pipeline.StreamsBuilder) {
	desc := b.Describe()
	a.topology.Store(&topologyView{desc: desc, text: desc.String()})
}

// Describe loads the scripts and returns the topology description, without any broker.
func Describe(cfg *config.Config) (*pipeline.TopologyDescription, error) {
	rt, b, err := loadTopology(cfg, offlineSchemas(cfg), nil, io.Discard, nil)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	return b.Describe(), nil
}
