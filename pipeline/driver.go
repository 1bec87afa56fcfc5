package pipeline

import (
	"fmt"
	"slices"
	"sync"
)

// Driver runs a topology without Kafka, deterministically, like Kafka Streams'
// TopologyTestDriver: input records are piped in one at a time, sink output is kept in
// memory per topic, and wall-clock time only moves when the caller advances it. Made by
// NewWorkersDriver, it runs the tasks on several goroutines (driver_workers.go).
type Driver struct {
	topo *Topology
	// workers run the tasks when the driver has several, topo being the first one's; nil
	// when topo runs every task on the caller's goroutine.
	workers *driverWorkers
	// mu guards outputs, which workers write at once.
	mu         sync.Mutex
	outputs    map[string][]OutputRecord
	partitions map[string]int32
	offsets    map[string]int64
	clock      int64
	// in is the record Pipe runs, kept here so that piping allocates nothing: the
	// topology keeps a pointer to it while it runs (Topology.Process).
	in       SourceRecord
	handlers ExceptionHandlers
	// internal are the records written to internal topics not processed yet, in the order
	// they were written, when the topology writes them (DriverOptions.RepartitionTopics);
	// internalTopics maps those topics' names to the names without the application id.
	internal       []SourceRecord
	internalTopics map[string]string
	// written are the records written to internal topics since ReadInternal last took them.
	written []OutputRecord
}

// OutputRecord is a record a sink wrote.
type OutputRecord struct {
	Topic     string
	Partition int32
	Key       []byte
	Value     []byte
	Headers   Headers
	Timestamp int64
}

// DriverOptions configure a Driver.
type DriverOptions struct {
	// Partitions per topic; topics not listed have one partition, as in TopologyTestDriver.
	Partitions map[string]int32
	// WallClockMs is the initial mock wall-clock time.
	WallClockMs int64
	Sensors     Sensors
	// Stores backs the topology's state stores; ApplicationID names their changelogs.
	Stores        StoreProvider
	ApplicationID string
	// ExceptionHandlers say what a record the topology fails on does; by default it fails
	// the Pipe call.
	ExceptionHandlers ExceptionHandlers
	// RepartitionTopics runs re-keyed records through their internal topics, in bytes, as
	// the agents of a streams group do (TopologyOptions.RepartitionTopics): each is read back
	// once the record that wrote it is through, in the order they were written, as
	// TopologyTestDriver processes its internal topics.
	RepartitionTopics bool
	// TaskTime closes windows on each task's own time, as Kafka Streams does and as the
	// agents of a streams group run (TopologyOptions.TaskTime), not on the global watermark.
	TaskTime bool
}

// NewDriver builds the topology from b and wires its sinks to in-memory topics.
func NewDriver(b *StreamsBuilder, opts DriverOptions) (*Driver, error) {
	d := newDriver(opts)
	topo, err := b.Build(TopologyOptions{
		Collector:         d,
		Sensors:           opts.Sensors,
		Clock:             func() int64 { return d.clock },
		SourcePartitions:  d.sourcePartitions(b),
		Stores:            opts.Stores,
		ApplicationID:     opts.ApplicationID,
		RepartitionTopics: opts.RepartitionTopics,
		TaskTime:          opts.TaskTime,
	})
	if err != nil {
		return nil, err
	}
	if opts.RepartitionTopics {
		d.internalTopics = map[string]string{}
		for _, it := range topo.InternalTopics() {
			d.internalTopics[opts.ApplicationID+"-"+it.Name] = it.Name
			d.partitions[opts.ApplicationID+"-"+it.Name] = it.Partitions
		}
	}
	// Piped records are processed at once: no partition ever has a backlog, so every one is
	// idle and the watermark is the largest stream time, as an operator's stream time is.
	topo.time.idleAll = true
	// Every task from the start, as an application's are once they are assigned.
	for _, id := range topo.TaskIDs() {
		if err := topo.AddTask(id); err != nil {
			return nil, err
		}
	}
	d.topo = topo
	// TopologyTestDriver starts its task when it is made, at the initial wall-clock time.
	if err := topo.startTasks(); err != nil {
		return nil, err
	}
	return d, nil
}

func newDriver(opts DriverOptions) *Driver {
	d := &Driver{
		outputs:    map[string][]OutputRecord{},
		partitions: map[string]int32{},
		offsets:    map[string]int64{},
		clock:      opts.WallClockMs,
		handlers:   opts.ExceptionHandlers,
	}
	for t, n := range opts.Partitions {
		d.partitions[t] = n
	}
	return d
}

// sourcePartitions are the partition counts of b's source topics.
func (d *Driver) sourcePartitions(b *StreamsBuilder) map[string]int32 {
	src := map[string]int32{}
	for _, t := range b.SourceTopics() {
		src[t], _ = d.PartitionsFor(t)
	}
	return src
}

// Close stops the workers of a driver made by NewWorkersDriver; the driver is not used
// afterwards. It does nothing for one made by NewDriver.
func (d *Driver) Close() {
	if d.workers != nil {
		d.workers.close()
	}
}

// Send implements RecordCollector.
func (d *Driver) Send(topic string, partition int32, key, value []byte, headers Headers, ts int64, _ *SourceRecord) error {
	if partition < 0 {
		partition = 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.internalTopics[topic]; ok {
		tp := topic + "/" + fmt.Sprint(partition)
		off := d.offsets[tp]
		d.offsets[tp] = off + 1
		d.internal = append(d.internal, SourceRecord{Topic: topic, Partition: partition, Offset: off, Timestamp: ts,
			Key: key, Value: value, Headers: headers})
		d.written = append(d.written, OutputRecord{Topic: topic, Partition: partition, Key: key, Value: value, Headers: headers, Timestamp: ts})
		return nil
	}
	d.outputs[topic] = append(d.outputs[topic], OutputRecord{
		Topic: topic, Partition: partition, Key: key, Value: value, Headers: headers, Timestamp: ts,
	})
	return nil
}

// PartitionsFor implements RecordCollector.
func (d *Driver) PartitionsFor(topic string) (int32, error) {
	if n, ok := d.partitions[topic]; ok {
		return n, nil
	}
	return 1, nil
}

// Pipe feeds one record into a source topic, at the next offset of partition 0.
func (d *Driver) Pipe(topic string, key, value []byte, timestamp int64, headers Headers) error {
	return d.PipeTo(topic, 0, key, value, timestamp, headers)
}

// PipeTo feeds one record into a partition of a source topic, at its next offset.
func (d *Driver) PipeTo(topic string, partition int32, key, value []byte, timestamp int64, headers Headers) error {
	if _, ok := d.topo.sourceSubtopology(topic); !ok || d.topo.internal[topic] != nil {
		return fmt.Errorf("topic %q is not a source of this topology", topic)
	}
	if n, _ := d.PartitionsFor(topic); partition < 0 || partition >= n {
		return fmt.Errorf("topic %q has %d partitions, not a partition %d", topic, n, partition)
	}
	tp := topic + "/" + fmt.Sprint(partition)
	off := d.offsets[tp]
	d.offsets[tp] = off + 1
	d.in = SourceRecord{
		Topic: topic, Partition: partition, Offset: off, Timestamp: timestamp,
		Key: key, Value: value, Headers: headers,
	}
	if d.workers != nil {
		return d.workers.pipe(d)
	}
	if _, _, _, err := d.topo.globalSource(topic); err == nil {
		// A global table's topic updates its store only: it moves no stream time.
		return d.topo.ProcessGlobal(d.in)
	}
	if err := d.topo.Process(&d.in); err != nil {
		if err := d.handlers.handle(d, &d.in, err); err != nil {
			return err
		}
	}
	// TopologyTestDriver commits after every record.
	for {
		if err := d.processInternal(); err != nil {
			return err
		}
		if err := d.topo.FlushCaches(); err != nil || len(d.internal) == 0 {
			return err
		}
	}
}

// processInternal processes the records written to internal topics, those they write in
// turn included, in the order they were written.
func (d *Driver) processInternal() error {
	for len(d.internal) > 0 {
		rec := d.internal[0]
		d.internal = d.internal[1:]
		if err := d.topo.ProcessInternal(d.internalTopics[rec.Topic], &rec); err != nil {
			if err := d.handlers.handle(d, &rec, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadInternal removes and returns the records written to internal topics (with the
// application id) since it was last called, in the order they were written, when the
// topology writes them (DriverOptions.RepartitionTopics): what Kafka Streams' bytes are
// compared with.
func (d *Driver) ReadInternal() []OutputRecord {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.written
	d.written = nil
	return out
}

// ReadOutput removes and returns the oldest record written to topic; ok=false when none is left.
func (d *Driver) ReadOutput(topic string) (OutputRecord, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	q := d.outputs[topic]
	if len(q) == 0 {
		return OutputRecord{}, false
	}
	d.outputs[topic] = q[1:]
	return q[0], true
}

// OutputTopics lists, in name order, the topics with records not read yet.
func (d *Driver) OutputTopics() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ts []string
	for t, q := range d.outputs {
		if len(q) > 0 {
			ts = append(ts, t)
		}
	}
	slices.Sort(ts)
	return ts
}

// Pending is the number of unread records in topic.
func (d *Driver) Pending(topic string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.outputs[topic])
}

// AdvanceWallClock moves the mock wall clock forward by ms and runs the wall-clock
// punctuators that became due.
func (d *Driver) AdvanceWallClock(ms int64) error {
	d.clock += ms
	if d.workers != nil {
		return d.workers.punctuate(d)
	}
	if err := d.topo.PunctuateWallClock(); err != nil {
		return err
	}
	return d.processInternal()
}

// Store returns one partition of a state store.
func (d *Driver) Store(name string, partition int32) (*KeyValueStore, error) {
	if d.workers != nil {
		return d.workers.store(name, partition)
	}
	return d.topo.Store(name, partition)
}

// WallClock is the mock wall-clock time.
func (d *Driver) WallClock() int64 { return d.clock }

// Topology is the topology the driver runs (its first worker's, with workers).
func (d *Driver) Topology() *Topology { return d.topo }
