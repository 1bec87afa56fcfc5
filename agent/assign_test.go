package agent

import (
	"maps"
	"testing"

	"github.com/stoatflow/stoatflow/pipeline"
)

func taskGrid(subs int, parts int32) []pipeline.TaskID {
	var out []pipeline.TaskID
	for s := range subs {
		for p := range parts {
			out = append(out, pipeline.TaskID{Subtopology: s, Partition: p})
		}
	}
	return out
}

// perWorker counts, for each worker, its tasks of each sub-topology and in all.
func perWorker(owners map[pipeline.TaskID]int, n int) (bySub []map[int]int, total []int) {
	bySub, total = make([]map[int]int, n), make([]int, n)
	for i := range bySub {
		bySub[i] = map[int]int{}
	}
	for id, w := range owners {
		bySub[w][id.Subtopology]++
		total[w]++
	}
	return bySub, total
}

// Each sub-topology's tasks are spread over the workers, and the totals differ by at most
// one, though no sub-topology's tasks divide evenly.
func TestAssignTasksEvenly(t *testing.T) {
	for _, c := range []struct {
		subs  int
		parts int32
		n     int
	}{{2, 4, 2}, {2, 3, 2}, {3, 5, 4}, {1, 1, 4}, {2, 8, 3}} {
		tasks := taskGrid(c.subs, c.parts)
		owners := assignTasks(tasks, c.n, nil)
		if len(owners) != len(tasks) {
			t.Fatalf("%+v: %d of %d tasks assigned", c, len(owners), len(tasks))
		}
		bySub, total := perWorker(owners, c.n)
		lo, hi := len(tasks), 0
		for w := range c.n {
			lo, hi = min(lo, total[w]), max(hi, total[w])
			for s := range c.subs {
				if got := bySub[w][s]; got < int(c.parts)/c.n || got > (int(c.parts)+c.n-1)/c.n {
					t.Errorf("%+v: worker %d runs %d tasks of sub-topology %d", c, w, got, s)
				}
			}
		}
		if hi-lo > 1 {
			t.Errorf("%+v: workers run between %d and %d tasks", c, lo, hi)
		}
	}
}

// The same tasks on the same workers stay where they are; with a worker more, only the
// tasks the new one needs move; with one fewer, only the tasks of the one that left move.
func TestAssignTasksStickily(t *testing.T) {
	tasks := taskGrid(2, 6)
	first := assignTasks(tasks, 2, nil)
	if again := assignTasks(tasks, 2, first); !maps.Equal(again, first) {
		t.Fatalf("the same assignment moved tasks: %v then %v", first, again)
	}
	three := assignTasks(tasks, 3, first)
	moved := 0
	for id, w := range three {
		if w != first[id] {
			moved++
			if w != 2 {
				t.Errorf("task %s moved from worker %d to %d, not to the new worker", id, first[id], w)
			}
		}
	}
	if moved != 4 {
		t.Errorf("%d tasks moved to the third worker, want 4", moved)
	}
	two := assignTasks(tasks, 2, three)
	for id, w := range two {
		if three[id] != 2 && w != three[id] {
			t.Errorf("task %s moved from worker %d to %d though its worker stayed", id, three[id], w)
		}
	}
}
