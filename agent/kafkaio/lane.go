package kafkaio

import "github.com/stoatflow/stoatflow/pipeline"

// A Lane sends records through its producer from one goroutine: the agent's workers send
// at once, each through a Lane of its own, so that the messages a Lane reuses need no lock.
// Records sent through any lane belong to the producer's transaction and epoch (Seal,
// Flush, CommitTxn) as records sent with Producer.Send do. A Lane is a
// pipeline.RecordCollector.
type Lane struct {
	p    *Producer
	free []*outMsg // reset messages to reuse (msgRecycler)
}

// NewLane returns a lane for one more sending goroutine.
func (p *Producer) NewLane() *Lane { return &Lane{p: p} }

// Send is Producer.Send from the lane's goroutine.
func (l *Lane) Send(topic string, partition int32, key, value []byte, headers pipeline.Headers, timestampMs int64, source *pipeline.SourceRecord) error {
	return l.p.send(&l.free, topic, partition, key, value, headers, timestampMs, source)
}

// PartitionsFor is Producer.PartitionsFor.
func (l *Lane) PartitionsFor(topic string) (int32, error) { return l.p.PartitionsFor(topic) }
