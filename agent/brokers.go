package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
)

// brokerCheckEvery is how often a running agent checks its bootstrap servers.
const brokerCheckEvery = 30 * time.Second

// waitForBrokers returns once a bootstrap server answers a metadata request. Until then
// it checks them at doubling waits from a second up to brokerCheckEvery, each check bounded
// by request.timeout.ms, and logs every failed round with each broker, its error, how long
// the agent has been waiting and the config key that names the brokers, as /readyz's reason
// too: a broker that accepts connections and never answers would otherwise keep the sarama
// clients retrying in silence, and a mistyped address would log every second forever. Like
// Kafka Streams, the agent waits for as long as it takes (until it is stopped).
func (a *Agent) waitForBrokers(ctx context.Context, brokers []string, cfg *kafkaio.Config) error {
	start := time.Now()
	wait := time.Second
	for attempt := 1; ; attempt, wait = attempt+1, min(2*wait, brokerCheckEvery) {
		checks := kafkaio.CheckBrokers(ctx, brokers, cfg)
		if a.reportBrokers(checks) {
			if attempt > 1 {
				a.log.Info("a broker answers; connecting", "after", time.Since(start).Round(time.Millisecond))
			}
			a.state.SetReason("")
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("stopped while waiting for a broker to answer: %w", ctx.Err())
		}
		elapsed := time.Since(start).Round(time.Millisecond)
		var reasons []string
		for _, c := range checks {
			a.log.Warn("broker does not answer; retrying (is streams.bootstrap.servers right?)", "broker", c.Addr,
				"key", "streams.bootstrap.servers", "config", a.cfg.Path, "attempt", attempt,
				"elapsed", elapsed, "took", c.Took.Round(time.Millisecond), "retry in", wait, "err", c.Err)
			reasons = append(reasons, fmt.Sprintf("%s: %v", c.Addr, c.Err))
		}
		a.state.SetReason(fmt.Sprintf("no broker of streams.bootstrap.servers answers (waiting for %v): %s", elapsed, strings.Join(reasons, "; ")))
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped while waiting for a broker to answer: %w", ctx.Err())
		case <-time.After(wait):
		}
	}
}

// reportBrokers sets the broker-reachable gauge of each check and reports whether any
// broker answered.
func (a *Agent) reportBrokers(checks []kafkaio.BrokerCheck) bool {
	answered := false
	for _, c := range checks {
		up := 0.0
		if c.Err == nil {
			up, answered = 1, true
		}
		a.metrics.BrokerReachable.WithLabelValues(c.Addr).Set(up)
	}
	return answered
}

// monitorBrokers checks the bootstrap servers every brokerCheckEvery while the agent runs,
// keeping the gauge current and logging when none answers any more, and when one does again.
func (a *Agent) monitorBrokers(ctx context.Context, brokers []string, cfg *kafkaio.Config) {
	t := time.NewTicker(brokerCheckEvery)
	defer t.Stop()
	down := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		checks := kafkaio.CheckBrokers(ctx, brokers, cfg)
		if ctx.Err() != nil {
			return
		}
		up := a.reportBrokers(checks)
		if !up && !down {
			for _, c := range checks {
				a.log.Warn("broker does not answer", "broker", c.Addr, "key", "streams.bootstrap.servers", "took", c.Took.Round(time.Millisecond), "err", c.Err)
			}
		}
		if up && down {
			a.log.Info("a broker answers again")
		}
		down = !up
	}
}
