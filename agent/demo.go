package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/stoatflow/stoatflow/agent/demo"
	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/pipeline/serdes/schemas"
)

// runDemoFeeder writes the records of the demo feeder agent.embedded.demo names into the
// embedded broker, so that `make run` shows records flowing on a fresh machine.
func (a *Agent) runDemoFeeder(ctx context.Context, brokers []string, f demo.Feeder) {
	var serde pipeline.Serde
	if f.ValueSchema != "" {
		s, err := a.demoSerde(f.ValueSchema)
		if err != nil {
			a.log.Error("demo feeder", "err", err)
			return
		}
		serde = s
	}
	cfg, err := kafkaio.SaramaConfig(a.cfg, kafkaio.RoleProducer)
	if err != nil {
		a.log.Error("demo feeder", "err", err)
		return
	}
	p, err := kafkaio.NewProducerWith(brokers, cfg, kafkaio.ProducerLimitsFor(a.cfg))
	if err != nil {
		a.log.Error("demo feeder", "err", err)
		return
	}
	defer p.Close()
	a.log.Info("the demo feeder writes sample records", "feeder", a.cfg.EmbeddedDemo, "topics", f.Topics, "every", f.Every)
	t := time.NewTicker(f.Every)
	defer t.Stop()
	for i := 0; ; i++ {
		now := time.Now()
		for _, r := range f.Tick(i, now) {
			value := r.Value
			var err error
			if serde != nil {
				value, err = serde.Serialize(r.Topic, nil, r.Data)
			}
			if err == nil {
				err = p.Send(r.Topic, -1, r.Key, value, nil, now.UnixMilli(), nil)
			}
			if err != nil {
				a.log.Warn("demo feeder", "topic", r.Topic, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// demoSerde writes a feeder's values with the Avro schema in file, next to the first
// script, through the application's schema registry.
func (a *Agent) demoSerde(file string) (pipeline.Serde, error) {
	if a.schemas == nil {
		return nil, fmt.Errorf("the demo feeder %q writes Avro: set schema.registry.url (\"embedded\")", a.cfg.EmbeddedDemo)
	}
	path := filepath.Join(filepath.Dir(a.cfg.Scripts[0]), file)
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return a.schemas.New("avro", false, schemas.Spec{Schema: string(text), SchemaFile: path})
}
