package pipeline

import "testing"

// testNodes are the nodes of a task, made if the topology does not run it yet.
func (t *Topology) testNodes(tb testing.TB, id TaskID) []*runtimeNode {
	tb.Helper()
	k, err := t.task(id)
	if err != nil || k == nil {
		tb.Fatalf("task %s: %v", id, err)
	}
	return k.nodes
}

// testCaches are the record caches of a task, made if the topology does not run it yet.
func (t *Topology) testCaches(tb testing.TB, id TaskID) []*recordCache {
	tb.Helper()
	t.testNodes(tb, id)
	return t.tasks[id].caches
}
