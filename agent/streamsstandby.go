package agent

import (
	"context"
	"errors"

	"github.com/stoatflow/stoatflow/agent/kafkaio"
	"github.com/stoatflow/stoatflow/agent/query"
	"github.com/stoatflow/stoatflow/pipeline"
	"github.com/stoatflow/stoatflow/state"
)

// In a streams group the broker gives an agent, besides its active tasks, standby tasks (the
// group's streams.num.standby.replicas) and warmup tasks (while it moves an active task to
// an agent whose state of it lags). The agent keeps their store partitions caught up from
// the changelogs with the classic mode's follower, reports in its heartbeats how far they
// are, as Kafka Streams does, so that the broker gives an active task to an agent holding
// its state and makes a warmup task active once it caught up, and answers stale reads from
// them. When one of them becomes active, the generation's restore replays only the tail.

// errStateReplaced: the state database a follower writes into was replaced (rebuilt) since
// it started; the next generation follows the new one.
var errStateReplaced = errors.New("the state database was replaced; following stops until the next assignment")

// loopWrite is a write into the state database run on the loop's goroutine.
type loopWrite struct {
	write func() error
	reply chan error
}

// onLoop runs write on the loop's goroutine, between its other steps: the state database
// takes its writes (the active tasks' commits, a standby task's restored batches) one at a
// time. It gives up when ctx ends or the loop stopped.
func (l *loop) onLoop(ctx context.Context, db *state.DB, write func() error) error {
	w := loopWrite{reply: make(chan error, 1), write: func() error {
		if db != l.db {
			return errStateReplaced
		}
		return write()
	}}
	select {
	case l.writes <- w:
		return <-w.reply
	case <-ctx.Done():
		return ctx.Err()
	case <-l.done:
		return errors.New("the agent's loop stopped")
	}
}

// keepTasks follows the changelogs of the generation's standby and warmup tasks (what the
// last generation followed stopped before its restore) and reports their offsets to the
// broker after each round.
func (l *loop) keepTasks(ctx context.Context, kept []kafkaio.TaskID) {
	stores := l.loggedStores()
	want := map[state.ChangelogPartition]bool{}
	for _, t := range kept {
		for _, name := range stores[t.Subtopology] {
			want[state.ChangelogPartition{Store: name, Partition: t.Partition}] = true
		}
	}
	member := l.k.member
	if len(want) == 0 || l.db == nil {
		member.ReportOffsets(nil, nil)
		return
	}
	db := l.db
	scope := &readScope{
		want: want,
		onDB: func(f func() error) error { return l.onLoop(ctx, db, f) },
		followed: func(copies map[state.ChangelogPartition]query.LagInfo) {
			member.ReportOffsets(taskOffsets(kept, stores, copies))
		},
	}
	l.a.log.Info("keeping standby and warmup tasks caught up from their changelogs", "tasks", kept)
	l.follow.start(ctx, func(ctx context.Context) { l.followChangelogs(ctx, db, scope) })
}

// loggedStores are the stores with a changelog of each sub-topology.
func (l *loop) loggedStores() map[int][]string {
	logged := map[string]bool{}
	for _, s := range l.b.Stores() {
		logged[s.Name] = s.Logged
	}
	out := map[int][]string{}
	for _, s := range l.b.SubtopologyTopics(l.a.cfg.ApplicationID) {
		for _, name := range s.Stores {
			if logged[name] {
				out[s.ID] = append(out[s.ID], name)
			}
		}
	}
	return out
}

// taskOffsets are the offsets a member reports of the tasks it keeps, as Kafka Streams sums
// them per task: offsets, where each task's copies stand in their changelogs, and ends, the
// changelogs' end offsets, both summed over the task's store partitions. A task a round has
// not read yet is left out.
func taskOffsets(kept []kafkaio.TaskID, stores map[int][]string, copies map[state.ChangelogPartition]query.LagInfo) (offsets, ends map[kafkaio.TaskID]int64) {
	offsets, ends = map[kafkaio.TaskID]int64{}, map[kafkaio.TaskID]int64{}
	for _, t := range kept {
		var at, end int64
		read := len(stores[t.Subtopology]) > 0
		for _, name := range stores[t.Subtopology] {
			lag, ok := copies[state.ChangelogPartition{Store: name, Partition: t.Partition}]
			if !ok {
				read = false
				break
			}
			at += lag.CurrentOffsetPosition
			end += lag.EndOffsetPosition
		}
		if read {
			offsets[t], ends[t] = at, end
		}
	}
	return offsets, ends
}

// keeps reports whether partition p of store belongs to a standby or warmup task this agent
// keeps.
func (h *heldTasks) keeps(store string, p int32) bool {
	sub, ok := h.stores[store]
	return ok && h.kept[pipeline.TaskID{Subtopology: sub, Partition: p}]
}
