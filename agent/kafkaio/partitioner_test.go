package kafkaio

import (
	"testing"

	"github.com/IBM/sarama"

	"github.com/stoatflow/stoatflow/pipeline"
)

func TestRequestedPartitioner(t *testing.T) {
	p := requestedPartitioner{}
	cases := []struct {
		name      string
		partition int32
		key       sarama.Encoder
		want      int32
	}{
		{"requested", 2, sarama.ByteEncoder("k"), 2},
		{"requested overrides key", 0, sarama.ByteEncoder("foobar"), 0},
		{"hashed key", -1, sarama.ByteEncoder("foobar"), pipeline.DefaultPartition([]byte("foobar"), 4)},
	}
	for _, c := range cases {
		msg := &sarama.ProducerMessage{Partition: c.partition, Key: c.key}
		got, err := p.Partition(msg, 4)
		if err != nil || got != c.want {
			t.Errorf("%s: Partition = %d, %v; want %d", c.name, got, err, c.want)
		}
	}
	if _, err := p.Partition(&sarama.ProducerMessage{Partition: 4}, 4); err == nil {
		t.Error("partition 4 of 4: want an error")
	}
	for range 100 {
		got, err := p.Partition(&sarama.ProducerMessage{Partition: -1}, 3)
		if err != nil || got < 0 || got >= 3 {
			t.Fatalf("nil key: Partition = %d, %v; want 0..2", got, err)
		}
	}
	if p.MessageRequiresConsistency(&sarama.ProducerMessage{Partition: -1}) {
		t.Error("an unkeyed record without requested partition needs no consistency")
	}
	if !p.MessageRequiresConsistency(&sarama.ProducerMessage{Partition: -1, Key: sarama.ByteEncoder("k")}) {
		t.Error("a keyed record needs consistency")
	}
}
