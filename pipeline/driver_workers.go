package pipeline

import (
	"errors"
	"fmt"
)

// NewWorkersDriver is NewDriver for a topology whose tasks run on len(builders) workers, as
// an agent's num.stream.threads workers run them (docs/architecture.md): each builder holds
// the same topology, made by a runtime of its own (a Lua runtime belongs to one goroutine),
// and builds the topology of one worker, which runs on a goroutine of its own. The tasks are
// dealt over the workers in task id order, so that consecutive sub-topologies run on
// different workers; the records they re-key for each other cross an Exchange, and the
// global stores are kept by the first worker. Pipe and AdvanceWallClock return once every
// worker is done with what they caused, record caches flushed and the watermark applied, so
// the driver still goes one step at a time. The workers take turns, one running at a time
// (the one a record is piped to, then each in order taking its inbox until every inbox is
// empty), so that the driver stays deterministic: what different tasks write to one topic
// comes in the same order every run. Close stops the workers.
func NewWorkersDriver(builders []*StreamsBuilder, opts DriverOptions) (*Driver, error) {
	if len(builders) < 2 {
		return nil, errors.New("a driver with workers needs a builder for each of at least two")
	}
	if opts.RepartitionTopics {
		// The agent's workers run them (agent/repartition.go); this driver's turns do not.
		return nil, errors.New("not supported yet: repartition topics in a driver with workers")
	}
	d := newDriver(opts)
	src := d.sourcePartitions(builders[0])
	gt := NewGlobalTime()
	// Piped records are processed at once: every partition is idle (NewDriver).
	gt.idleAll = true
	ws := &driverWorkers{ex: NewExchange(len(builders), DefaultExchangeCapacity, gt), sources: builders[0].SourceTasks()}
	for i, b := range builders {
		topo, err := b.Build(TopologyOptions{
			Collector:        d,
			Sensors:          opts.Sensors,
			Clock:            func() int64 { return d.clock },
			SourcePartitions: src,
			Stores:           opts.Stores,
			ApplicationID:    opts.ApplicationID,
			ExplicitTasks:    true,
			Time:             gt,
			Router:           ws.ex.Lane(i),
			SkipGlobalStores: i > 0,
			TaskTime:         opts.TaskTime,
		})
		if err != nil {
			return nil, err
		}
		ws.all = append(ws.all, &driverWorker{topo: topo, lane: ws.ex.Lane(i), cmds: make(chan func()), done: make(chan struct{})})
	}
	ids := ws.all[0].topo.TaskIDs()
	ws.owners = map[TaskID]int{}
	for i, id := range ids {
		ws.owners[id] = i % len(ws.all)
	}
	ws.ex.SetOwners(ws.owners)
	for _, w := range ws.all {
		go w.run()
	}
	d.topo, d.workers = ws.all[0].topo, ws
	// Every task from the start, started at the initial wall clock (NewDriver).
	for _, id := range ids {
		w := ws.all[ws.owners[id]]
		if err := w.do(func() error { return w.topo.AddTask(id) }); err != nil {
			d.Close()
			return nil, err
		}
	}
	for _, w := range ws.all {
		if err := w.do(w.topo.startTasks); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

// driverWorkers are the workers of a Driver made by NewWorkersDriver.
type driverWorkers struct {
	all     []*driverWorker
	ex      *Exchange
	sources *SourceTasks
	owners  map[TaskID]int // which worker runs each task
}

// driverWorker runs one topology on its goroutine: what the driver gives it (cmds), the
// records other workers re-key for its tasks (its lane's inbox) among them.
type driverWorker struct {
	topo *Topology
	lane *Lane
	cmds chan func()
	done chan struct{}
}

func (w *driverWorker) run() {
	defer close(w.done)
	for fn := range w.cmds {
		fn()
	}
}

// do runs fn on the worker's goroutine and waits for it.
func (w *driverWorker) do(fn func() error) error {
	reply := make(chan error, 1)
	w.cmds <- func() { reply <- fn() }
	return <-reply
}

// takeInbox runs the records other workers re-keyed for the worker's tasks, on its
// goroutine; it reports whether there were any. A record that fails goes to the exception
// handlers, as a piped record does, named by its origin; one they do not skip is the error,
// and the rest of the inbox is dropped with it.
func (w *driverWorker) takeInbox(d *Driver) (took bool, err error) {
	err = w.do(func() error {
		recs := w.lane.Take()
		took = len(recs) > 0
		defer w.lane.Done(recs)
		for i := range recs {
			err := w.topo.ProcessRekeyed(&recs[i])
			if err != nil && recs[i].Origin != nil {
				if err = d.handlers.handle(d, recs[i].Origin, err); err == nil {
					err = w.topo.Drain()
				}
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	return took, err
}

// deliver has the workers take their inboxes in turn until every one is empty: what a
// worker runs hands what it re-keys to the others' inboxes before it returns.
func (ws *driverWorkers) deliver(d *Driver) error {
	for {
		took := false
		for _, w := range ws.all {
			t, err := w.takeInbox(d)
			if err != nil {
				return err
			}
			took = took || t
		}
		if !took {
			return nil
		}
	}
}

// pipe runs the record d holds on the worker that runs its task, then settles.
func (ws *driverWorkers) pipe(d *Driver) error {
	in := &d.in
	w := ws.all[0]
	if _, _, _, err := w.topo.globalSource(in.Topic); err == nil {
		// A global table's topic updates its store only, on the worker that keeps it.
		return w.do(func() error { return w.topo.ProcessGlobal(*in) })
	}
	id, _ := ws.sources.Of(TopicPartition{Topic: in.Topic, Partition: in.Partition})
	if i, ok := ws.owners[id]; ok {
		w = ws.all[i]
	}
	err := w.do(func() error {
		err := w.topo.Process(in)
		if err == nil {
			return nil
		}
		if err := d.handlers.handle(d, in, err); err != nil {
			return err
		}
		return w.topo.Drain()
	})
	if err != nil {
		return err
	}
	return ws.settle(d)
}

// punctuate runs every worker's wall-clock punctuators that are due, worker by worker, each
// one's records delivered before the next punctuates, then settles.
func (ws *driverWorkers) punctuate(d *Driver) error {
	for _, w := range ws.all {
		if err := w.do(w.topo.PunctuateWallClock); err != nil {
			return err
		}
		if err := ws.deliver(d); err != nil {
			return err
		}
	}
	return ws.settle(d)
}

// settle finishes a step: the records on their way delivered, then every worker's record
// caches flushed and the watermark applied, worker by worker, and again while that moved
// something (a flush forwards into other workers' tasks), then the processors that keep
// state in memory write it, as TopologyTestDriver commits after every record.
func (ws *driverWorkers) settle(d *Driver) error {
	for {
		if err := ws.deliver(d); err != nil {
			return err
		}
		moved := false
		for _, w := range ws.all {
			err := w.do(func() error {
				wm := w.topo.Watermark()
				flushed, err := w.topo.FlushRecordCaches()
				if err == nil {
					err = w.topo.AdvanceWatermark()
				}
				moved = moved || flushed || w.topo.Watermark() != wm
				return err
			})
			if err == nil {
				err = ws.deliver(d)
			}
			if err != nil {
				return err
			}
		}
		if !moved {
			break
		}
	}
	for _, w := range ws.all {
		if err := w.do(w.topo.PrepareCommit); err != nil {
			return err
		}
	}
	return nil
}

// store finds a store partition on the worker whose task owns it (or the global stores').
func (ws *driverWorkers) store(name string, partition int32) (*KeyValueStore, error) {
	var s *KeyValueStore
	var errs []error
	for _, w := range ws.all {
		err := w.do(func() error {
			var err error
			s, err = w.topo.Store(name, partition)
			return err
		})
		if err == nil {
			return s, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("store %s partition %d: %w", name, partition, errors.Join(errs...))
}

// close stops the workers once they have run what they were given.
func (ws *driverWorkers) close() {
	for _, w := range ws.all {
		close(w.cmds)
		<-w.done
	}
}
