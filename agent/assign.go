package agent

import (
	"cmp"
	"slices"

	"github.com/stoatflow/stoatflow/pipeline"
)

// assignTasks gives each task one of n workers, evenly and stickily, as Kafka Streams'
// assignor spreads the tasks of each sub-topology over the stream threads: each
// sub-topology's tasks are spread over the workers (n tasks of it: one each), the workers
// that get one more of a sub-topology whose tasks do not divide evenly being the least
// loaded so far; a task stays on the worker prev gave it while that worker has room.
func assignTasks(tasks []pipeline.TaskID, n int, prev map[pipeline.TaskID]int) map[pipeline.TaskID]int {
	out := make(map[pipeline.TaskID]int, len(tasks))
	load := make([]int, n)
	bySub := map[int][]pipeline.TaskID{}
	var subs []int
	for _, id := range tasks {
		if _, ok := bySub[id.Subtopology]; !ok {
			subs = append(subs, id.Subtopology)
		}
		bySub[id.Subtopology] = append(bySub[id.Subtopology], id)
	}
	slices.Sort(subs)
	least := func() []int {
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(load[a], load[b]) })
		return order
	}
	valid := func(id pipeline.TaskID) (int, bool) {
		w, ok := prev[id]
		return w, ok && w >= 0 && w < n
	}
	for _, sub := range subs {
		ids := bySub[sub]
		slices.SortFunc(ids, pipeline.TaskID.Compare)
		room := make([]int, n)
		for i, w := range least() {
			room[w] = len(ids) / n
			if i < len(ids)%n {
				room[w]++
			}
		}
		var rest []pipeline.TaskID
		for _, id := range ids {
			if w, ok := valid(id); ok && room[w] > 0 {
				out[id] = w
				room[w]--
				load[w]++
			} else {
				rest = append(rest, id)
			}
		}
		for _, id := range rest {
			for _, w := range least() {
				if room[w] > 0 {
					out[id] = w
					room[w]--
					load[w]++
					break
				}
			}
		}
	}
	return out
}

// tasksOf lists the tasks an assignment gives worker w, in order.
func tasksOf(owners map[pipeline.TaskID]int, w int) []pipeline.TaskID {
	var out []pipeline.TaskID
	for id, o := range owners {
		if o == w {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, pipeline.TaskID.Compare)
	return out
}
