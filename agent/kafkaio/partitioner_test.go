package kafkaio

import (
	"testing"

	"github.com/IBM/sarama"
)

// The vectors of Kafka's UtilsTest.testMurmur2, as Java ints.
func TestMurmur2MatchesKafka(t *testing.T) {
	for in, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
		"":    275646681,
	} {
		if got := int32(murmur2([]byte(in))); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", in, got, want)
		}
	}
}

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
		{"hashed key", -1, sarama.ByteEncoder("foobar"), murmur2Partition([]byte("foobar"), 4)},
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
