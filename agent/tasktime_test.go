package agent

import (
	"testing"

	"github.com/stoatflow/stoatflow/agent/config"
)

// In a streams group the workers' topologies close each task's windows on its own time and
// send re-keyed records through the repartition topics; in a classic group they close them
// on the global watermark and route re-keyed records in memory.
func TestStreamsGroupRunsTasksOnTheirOwnTime(t *testing.T) {
	for _, protocol := range []string{"classic", "streams"} {
		cfg := config.Default()
		cfg.GroupProtocol = protocol
		a, err := New(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		opts := a.topologyOptions(&kafkaClients{})
		streams := protocol == "streams"
		if opts.TaskTime != streams || opts.RepartitionTopics != streams {
			t.Errorf("group.protocol = %q: TaskTime %v, RepartitionTopics %v, want both %v", protocol, opts.TaskTime, opts.RepartitionTopics, streams)
		}
	}
}
