package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/bench/internal/childproc"
	"github.com/stoatflow/stoatflow/pipeline"
)

const (
	inputTopic  = childproc.InputTopic
	outputTopic = childproc.OutputTopic
	partitions  = 4
	vocabSize   = 10_000
	lineBytes   = 100
)

// syllables are consonant-vowel pairs: 20 × 5 = 100 of them, so two syllables number the
// whole vocabulary and every word is letters only.
var syllables = func() []string {
	var out []string
	for _, c := range "bcdfghjklmnpqrstvwxz" {
		for _, v := range "aeiou" {
			out = append(out, string(c)+string(v))
		}
	}
	return out
}()

// vocabulary returns n ≤ 1,000,000 distinct words of 4 to 10 letters (6 to 12 beyond
// 10,000 words). The first two syllables (three beyond 10,000 words) encode the index, so
// the optional tail never makes two words equal.
func vocabulary(n int) []string {
	words := make([]string, n)
	for i := range words {
		w := syllables[i%100] + syllables[(i/100)%100]
		if n > 100*100 {
			w += syllables[(i/10_000)%100]
		}
		for range i % 4 {
			w += syllables[(i*7+3)%100]
		}
		words[i] = w
	}
	return words
}

// numericPad fills a line up to lineBytes without adding a letter: the word count splits
// on letters (%a+), so every line holds exactly one word.
const numericPad = " 0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789-0123456789"

// line is the value of input record i: its word, its sequence number and its timestamp,
// padded with digits to lineBytes.
func line(word string, i int, ts int64) []byte {
	b := fmt.Appendf(make([]byte, 0, lineBytes), "%s %010d %013d", word, i, ts)
	if len(b) < lineBytes {
		b = append(b, numericPad[:lineBytes-len(b)]...)
	}
	return b
}

// generator yields the input records: keys drawn uniformly from the vocabulary with a
// fixed seed, so every run and every scenario reads the same data.
type generator struct {
	words []string
	rng   *rand.Rand
	next  int
	// avro, when set, encodes each value as an Avro record of its word, number, time and
	// line; json as a JSON object of them.
	avro *avroInput
	json bool
}

// newGenerator draws keys from a vocabulary of n words; 0 is vocabSize.
func newGenerator(n int) *generator {
	if n == 0 {
		n = vocabSize
	}
	return &generator{words: vocabulary(n), rng: rand.New(rand.NewPCG(1, 2))}
}

// record returns the next record's key and value for timestamp ts.
func (g *generator) record(ts int64) (key string, value []byte, err error) {
	key = g.words[g.rng.IntN(len(g.words))]
	value = line(key, g.next, ts)
	switch {
	case g.avro != nil:
		value, err = g.avro.encode(key, g.next, ts, value)
	case g.json:
		value, err = json.Marshal(jsonLine{Word: key, N: g.next, TS: ts, Text: string(value)})
	}
	g.next++
	return key, value, err
}

// jsonLine is an input value of the JSON scenarios.
type jsonLine struct {
	Word string `json:"word"`
	N    int    `json:"n"`
	TS   int64  `json:"ts"`
	Text string `json:"text"`
}

// producerConfig is the harness's own producer: batched like the agent's, acks from every
// replica, partitions chosen by the caller (murmur2, as Kafka's default partitioner).
func producerConfig() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V3_6_0_0
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Return.Successes = true
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Producer.Flush.Bytes = 256 << 10
	c.Producer.Flush.Frequency = time.Millisecond
	c.ChannelBufferSize = 4096
	return c
}

// feeder produces records; close waits for the broker's acknowledgements.
type feeder struct {
	p    sarama.AsyncProducer
	errs chan error
	// unanswered counts the records sent and neither acknowledged nor failed yet.
	unanswered sync.WaitGroup
	drained    sync.WaitGroup
}

func newFeeder(brokers []string) (*feeder, error) {
	p, err := sarama.NewAsyncProducer(brokers, producerConfig())
	if err != nil {
		return nil, fmt.Errorf("input producer: %w", err)
	}
	f := &feeder{p: p, errs: make(chan error, 1)}
	f.drained.Add(2)
	go func() {
		defer f.drained.Done()
		for range p.Successes() {
			f.unanswered.Done()
		}
	}()
	go func() {
		defer f.drained.Done()
		for e := range p.Errors() {
			select {
			case f.errs <- e.Err:
			default:
			}
			f.unanswered.Done()
		}
	}()
	return f, nil
}

// send queues one record on the partition Kafka's default partitioner picks for key.
func (f *feeder) send(key string, value []byte, ts int64) error {
	return f.sendTo(pipeline.DefaultPartition([]byte(key), partitions), key, value, ts)
}

func (f *feeder) sendTo(partition int32, key string, value []byte, ts int64) error {
	select {
	case err := <-f.errs:
		return fmt.Errorf("input producer: %w", err)
	default:
	}
	f.unanswered.Add(1)
	f.p.Input() <- &sarama.ProducerMessage{
		Topic: inputTopic, Partition: partition,
		Key: sarama.StringEncoder(key), Value: sarama.ByteEncoder(value),
		Timestamp: time.UnixMilli(ts),
	}
	return nil
}

// close waits until every queued record is answered and only then closes the producer:
// sarama fails the records it is still retrying when its producer closes (ErrShuttingDown).
func (f *feeder) close() error {
	f.unanswered.Wait()
	f.p.AsyncClose()
	f.drained.Wait()
	select {
	case err := <-f.errs:
		return fmt.Errorf("input producer: %w", err)
	default:
		return nil
	}
}
