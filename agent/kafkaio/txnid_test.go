package kafkaio

import (
	"testing"

	"github.com/stoatflow/stoatflow/agent/config"
)

// TestStreamsGroupTransactionalID: the transactional.id is <application.id>-<group.instance.id>
// in a classic group and with a group.instance.id written in the config; in a streams group
// without one it is Kafka Streams' EOSv2 id of a first stream thread, from the process id,
// so that two agents on one host (the same default group.instance.id) do not fence each
// other.
func TestStreamsGroupTransactionalID(t *testing.T) {
	const pid = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
	for _, c := range []struct {
		name      string
		instance  string
		set       bool
		processID string
		want      string
	}{
		{"classic, default group.instance.id", "app-host", false, "", "app-app-host"},
		{"classic, group.instance.id written", "a1", true, "", "app-a1"},
		{"streams, default group.instance.id", "app-host", false, pid, "app-" + pid + "-1"},
		{"streams, group.instance.id written", "a1", true, pid, "app-a1"},
	} {
		cfg := &config.Config{ApplicationID: "app", GroupInstanceID: c.instance, GroupInstanceIDSet: c.set}
		if got := TransactionalID(cfg, c.processID); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
