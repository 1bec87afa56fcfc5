package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
)

var demoLines = []string{
	"the quick brown fox jumps over the lazy dog",
	"a stoat is a small mustelid that turns white in winter",
	"kafka streams keeps state next to the processing",
	"lua makes pipeline changes quick to write and to review",
	"exactly once means every record counts once",
}

// runDemoFeeder writes a sample line to topic every half second (agent.embedded.demo), so
// that `make run` shows records flowing on a fresh machine.
func (a *Agent) runDemoFeeder(ctx context.Context, brokers []string, topic string) {
	cfg, err := kafkaio.SaramaConfig(a.cfg, kafkaio.RoleProducer)
	if err != nil {
		a.log.Error("demo feeder", "err", err)
		return
	}
	p, err := kafkaio.NewProducer(brokers, cfg)
	if err != nil {
		a.log.Error("demo feeder", "err", err)
		return
	}
	defer p.Close()
	a.log.Info("demo feeder writes a sample line every 500ms", "topic", topic)
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			key := []byte(fmt.Sprintf("line-%d", i))
			if err := p.Send(topic, -1, key, []byte(demoLines[i%len(demoLines)]), nil, now.UnixMilli()); err != nil {
				a.log.Warn("demo feeder", "err", err)
			}
		}
	}
}
